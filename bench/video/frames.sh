#!/usr/bin/env bash
# Frames per second of video.decode against ffmpeg extracting the same frames in one pass
# (`ffmpeg -vf select=...`): two 60 s 640x360 H.264 videos at 25 fps, one encoded with
# libx264's defaults (a keyframe every 250 frames at most) and one with a long GOP (750), cut
# into 2 s clips of 4 frames each (120 frames); Orch decodes them (2 replicas) and measures
# their sharpness, ffmpeg decodes them to raw RGB. Three rounds each, alternating, in one
# invocation; prints each run, the medians and their ratio.
#   bench/video/frames.sh [ORCH]   (default build/bin/orch)
set -euo pipefail
cd "$(dirname "$0")/../.."
orch=$(realpath "${1:-build/bin/orch}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
ffmpeg -v error -f lavfi -i "testsrc2=duration=60:size=640x360:rate=25" -c:v libx264 \
  -pix_fmt yuv420p default.mp4
ffmpeg -v error -f lavfi -i "testsrc2=duration=60:size=640x360:rate=25" -c:v libx264 \
  -pix_fmt yuv420p -g 750 -keyint_min 750 -sc_threshold 0 longgop.mp4
exec /usr/bin/python3 - "$orch" <<'PY'
import json, math, statistics, subprocess, sys, time
orch = sys.argv[1]
# The frames video.frames picks: clip c (2 s), frame i of 4: time 2c + (i + 0.5) * 0.5 s; the
# first frame at or after it, at 25 fps.
times = [2 * c + (i + 0.5) * 0.5 for c in range(30) for i in range(4)]
numbers = sorted({math.ceil(t * 25 - 1e-6) for t in times})
# As a short expression (ffmpeg refuses a sum of 120 terms): the frames repeat every second.
residues = sorted({n % 25 for n in numbers})
assert {n for n in range(1500) if n % 25 in residues} == set(numbers)
select = "+".join("eq(mod(n,25),%d)" % r for r in residues)
for video in ("default", "longgop"):
    open("frames.orch", "w").write(f"""pipeline frames;
source videos = files("{video}.mp4") as Video;
clips = expand(video.clips(videos, seconds: 2.0)) as Clip;
frames = expand(video.frames(clips, per_clip: 4)) as Frame;
sharp = image.sharpness(video.decode(frames) {{ batch: 16, replicas: 2 }});
sink jsonl(path: "out.jsonl", record: {{ sharpness: reduce(reduce(sharp)) }});
""")
    runs = {"orch": [], "ffmpeg": []}
    for round in range(3):
        start = time.monotonic()
        subprocess.run([orch, "run", "frames.orch", "--in-process", "--threads", "2", "--quiet",
                        "--no-journal"], check=True, stderr=subprocess.DEVNULL)
        runs["orch"].append(time.monotonic() - start)
        frames = sum(len(clip) for clip in json.loads(open("out.jsonl").read())["sharpness"])
        start = time.monotonic()
        raw = subprocess.run(["ffmpeg", "-v", "error", "-threads", "2", "-i", video + ".mp4",
                              "-vf", "select='%s'" % select, "-vsync", "0", "-f", "rawvideo",
                              "-pix_fmt", "rgb24", "-"], check=True, capture_output=True).stdout
        runs["ffmpeg"].append(time.monotonic() - start)
        extracted = len(raw) // (640 * 360 * 3)
        print("%-8s round %d: orch %d frames in %.2f s, ffmpeg %d frames in %.2f s"
              % (video, round + 1, frames, runs["orch"][-1], extracted, runs["ffmpeg"][-1]))
        if frames != len(times) or extracted != len(numbers):
            sys.exit("frame counts differ from what was asked")
    o, f = statistics.median(runs["orch"]), statistics.median(runs["ffmpeg"])
    print("%-8s median: orch %.0f frames/s, ffmpeg %.0f frames/s, orch time / ffmpeg time = %.2f"
          % (video, len(times) / o, len(numbers) / f, o / f))
PY
