"""A small convolutional network that embeds images, for examples/page_embeddings.orch.

Its weights come from a fixed seed (a stand-in for loading a checkpoint in the constructor), so
every replica, and this class run directly in Python, computes the same embeddings. Orch gives
each batch as a list of H x W x 3 uint8 NumPy arrays; the result is one unit-length vector per
image. A Call with a GPU share (`gpus: 0.5`) runs the network on that device, in full float32
precision (no TF32), so its embeddings differ from the CPU's only by rounding; Orch hides GPUs
from a CPU Call's process.
"""

import sys

import numpy
import torch


class Embedder:
    def __init__(self, dims=16, seed=0):
        torch.manual_seed(seed)
        self.net = torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, kernel_size=3, stride=2, padding=1),
            torch.nn.ReLU(),
            torch.nn.Conv2d(8, 16, kernel_size=3, stride=2, padding=1),
            torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(1),
            torch.nn.Flatten(),
            torch.nn.Linear(16, dims),
        ).eval()
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        if self.device.type == "cuda":
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
            self.net.to(self.device)
            print("embedder: on cuda (%s)" % torch.cuda.get_device_name(), file=sys.stderr)

    @torch.no_grad()
    def __call__(self, images):
        # A lone image would take another path through PyTorch's convolutions, whose float
        # rounding differs in the last bits: an image's embedding would then depend on how Orch
        # happened to batch it. Given a partner, it takes the batched path like every other.
        lone = len(images) == 1
        if lone:
            images = [images[0], images[0]]
        batch = torch.from_numpy(numpy.stack(images)).to(self.device)
        batch = batch.permute(0, 3, 1, 2).float() / 255.0
        embeddings = torch.nn.functional.normalize(self.net(batch), dim=1).cpu()
        return embeddings[:1] if lone else embeddings
