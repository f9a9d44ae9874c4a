"""A page scorer for bench/plain: a small convolutional network over a rendered page, the shape of
a new user's "render, then a PyTorch model" job. Weights come from a fixed seed, so every replica
and the plain Python loop of the baseline give the same scores. Each image is scored alone (pages
differ in size), so a score does not depend on how Orch batched it."""

import numpy
import torch

torch.set_num_threads(1)


class PageScorer:
    def __init__(self, seed=0):
        torch.manual_seed(seed)
        self.net = torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, kernel_size=5, stride=2, padding=2),
            torch.nn.ReLU(),
            torch.nn.Conv2d(8, 8, kernel_size=3, stride=2, padding=1),
            torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(1),
            torch.nn.Flatten(),
            torch.nn.Linear(8, 1),
        ).eval()

    @torch.no_grad()
    def __call__(self, images):
        scores = []
        for image in images:
            # Every fourth pixel each way: the net looks at the page's layout, not its ink.
            tensor = torch.from_numpy(numpy.array(image[::4, ::4])).permute(2, 0, 1)
            score = self.net(tensor.unsqueeze(0).float() / 255.0)
            scores.append(round(float(score[0, 0]), 4))
        return scores
