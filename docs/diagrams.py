"""The course's explanatory diagrams (not measurements): ``python docs/diagrams.py`` writes
docs/img/*.png. Measured figures live in figures/ and come only from GPU runs.

Allocator sizes are PyTorch's CUDA caching allocator constants (c10/cuda/CUDACachingAllocator):
requests are rounded up to multiples of 512 bytes; requests of at most 1 MiB come from the small
pool, carved out of 2 MiB segments; requests between 1 and 10 MiB get a 20 MiB segment of the
large pool; larger requests get a segment of their own, rounded up to a multiple of 2 MiB.
"""
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

OUT = Path(__file__).parent / "img"
USED, FREE, EMPTY, EDGE = "#4C72B0", "#DD8452", "#E5E5E5", "#333333"
WAIT, READ, IDLE = "#d62728", "#555555", "#999999"  # the measured timelines' colours (06, 07)


def _box(ax, x, y, w, h, color, text="", size=9, text_color="white"):
    ax.add_patch(Rectangle((x, y), w, h, facecolor=color, edgecolor=EDGE, linewidth=0.8))
    if text:
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=size, color=text_color)


def allocator():
    """Segments and blocks of the caching allocator, drawn to scale in MiB: a 20 MiB segment with
    no free room for a slightly larger tensor (a little fragmentation), and the source of notebook
    03's stairs, tensors over 10 MiB that outgrow their own segments, which stay cached; under
    expandable segments a new, larger tensor goes to the segment's end and leaves a hole."""
    fig, ax = plt.subplots(figsize=(12, 5.2))
    note = dict(fontsize=9, va="center")
    rows = [
        ("small pool: one 2 MiB segment\n(requests ≤ 1 MiB, rounded to 512 B)",
         [(0, 2, [(0.5, USED, ""), (0.25, USED, ""), (0.75, FREE, ""), (0.5, EMPTY, "")])],
         "blocks of 0.5 and 0.25 MiB in use, 0.75 MiB freed, 0.5 MiB not yet carved"),
        ("large pool: one 20 MiB segment\n(requests of 1 to 10 MiB)",
         [(0, 20, [(6, USED, "6 MiB"), (3, FREE, "freed 3"), (7, USED, "7 MiB"), (4, USED, "4 MiB")])],
         "a growing tensor of 3.1 MiB fits nowhere here:\nthe allocator reserves a new 20 MiB segment"
         "\nwhile 3 MiB sit free (a little fragmentation)"),
        ("requests over 10 MiB: each its own\nsegment, rounded up to 2 MiB",
         [(0, 12, [(12, FREE, "outgrown 12 MiB segment")]),
          (12.5, 14, [(12.1, USED, "12.1 MiB"), (1.9, EMPTY, "")])],
         "the stairs: a tensor past 12 MiB gets a new\n14 MiB segment; the old one stays cached and\n"
         "no later, larger tensor fits it"),
        ("expandable_segments:True: one segment\nthat grows by mapping more pages",
         [(0, 30, [(6, USED, "6"), (7, USED, "7"), (8, FREE, "old 8: freed hole"),
                   (8.5, USED, "new 8.5"), (0.5, EMPTY, "")])],
         "a new, larger tensor is placed at the segment's\nend (more pages mapped); the old tensor's\n"
         "range becomes a free hole, still mapped"),
    ]
    for r, (label, segments, text) in enumerate(rows):
        y = 3 - r
        ax.text(-0.5, y + 0.35, label, ha="right", va="center", fontsize=9)
        for start, size, blocks in segments:
            x = start
            for w, color, name in blocks:
                _box(ax, x, y, w, 0.7, color, name,
                     text_color="black" if color == EMPTY else "white")
                x += w
            ax.add_patch(Rectangle((start, y), size, 0.7, fill=False, edgecolor=EDGE, linewidth=2))
        ax.text(max(s + size for s, size, _ in segments) + 0.6, y + 0.35, text, **note)
    handles = [Rectangle((0, 0), 1, 1, facecolor=c, edgecolor=EDGE) for c in (USED, FREE, EMPTY)]
    ax.legend(handles, ["allocated block", "free block (cached)", "not yet carved"],
              loc="upper center", fontsize=9, frameon=False, bbox_to_anchor=(0.5, -0.12), ncol=3)
    ax.set(xlim=(-0.2, 42), ylim=(-0.3, 3.9), xlabel="MiB (to scale)")
    ax.set_xticks(range(0, 35, 5))
    ax.set_yticks([])
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    ax.spines["bottom"].set_bounds(0, 30)
    ax.set_title("PyTorch's CUDA caching allocator: segments reserved from the GPU, blocks handed to tensors",
                 fontsize=11)
    return fig


def static_cache(prompt=4, generated=3, cache_len=12):
    """Positions of a static cache at one decode step, and the mask attention applies."""
    fig, ax = plt.subplots(figsize=(10, 3.2))
    now = prompt + generated
    for pos in range(cache_len):
        color, text = ((USED, "prompt") if pos < prompt else (FREE, "gen.") if pos < now
                       else (EMPTY, ""))
        _box(ax, pos, 1.2, 1, 0.8, color, text, size=8)
        masked = pos > now
        _box(ax, pos, 0, 1, 0.8, EMPTY if masked else "#55A868", "−∞" if masked else "attend", size=8,
             text_color="black" if masked else "white")
    _box(ax, now, 1.2, 1, 0.8, "#C44E52", "new", size=8)
    ax.text(-0.2, 1.6, "cache (one layer,\none row)", ha="right", va="center", fontsize=9)
    ax.text(-0.2, 0.4, "mask for the\nnew token", ha="right", va="center", fontsize=9)
    ax.annotate("reserved, not filled yet: written in place by later steps", xy=(now + 2.5, 2.05),
                xytext=(now + 1.2, 2.6), fontsize=9, arrowprops=dict(arrowstyle="->"))
    ax.text(cache_len / 2, -0.45, f"attention still reads all {cache_len} positions each step; the mask "
            "only hides the unfilled ones: extra pairs, which need not cost visible GPU time",
            ha="center", va="top", fontsize=9)
    ax.set(xlim=(-3.2, cache_len + 0.2), ylim=(-0.9, 3.0))
    ax.axis("off")
    ax.set_title(f"Static KV cache: max_cache_len={cache_len} positions allocated once "
                 f"(prompt {prompt}, {generated} generated, step {generated + 1})", fontsize=11)
    return fig


def sync_lanes(steps=3):
    """CPU and GPU lanes: the stop flag read every step against read one step late."""
    fig, axes = plt.subplots(2, 1, figsize=(11, 4.6), sharex=True)
    # the host's time per step about the GPU's (as under a CUDA graph): the late read leaves a short wait
    launch, work, read, lag = 1.5, 1.9, 0.25, 0.1

    def cpu_wait(ax, start, end):  # red, as the measured timelines' "CPU: waiting for the GPU"
        if end > start:
            _box(ax, start, 1, end - start, 0.6, WAIT, "waits" if end - start > 0.5 else "",
                 size=8)

    # Per-step check: launch step i, wait for its kernels, read the flag, only then launch i+1.
    ax, t = axes[0], 0.0
    for i in range(steps):
        _box(ax, t, 1, launch, 0.6, USED, f"launch {i}", size=8)
        done = t + lag + work
        _box(ax, t + lag, 0, work, 0.6, FREE, f"kernels {i}", size=8)
        cpu_wait(ax, t + launch, done)
        _box(ax, done, 1, read, 0.6, READ)
        if i < steps - 1:  # grey, as the measured timelines' GPU idle bands
            ax.axvspan(done, done + read + lag, ymin=0.05, ymax=0.45, color=IDLE, alpha=0.25, linewidth=0)
            ax.text(done + (read + lag) / 2, 0.3, "idle", fontsize=8, ha="center", va="center")
        t = done + read
    end_top = t
    ax.set_title("Check every step (.item()): the CPU waits for the flag, then the GPU waits for "
                 "the next launch", fontsize=10, loc="left")
    # Late check: launch step i+1, then read step i's flag (two streams, or one stream and an event).
    ax, t, gpu_free = axes[1], 0.0, 0.0
    for i in range(steps + 1):
        _box(ax, t, 1, launch, 0.6, USED, f"launch {i}", size=8)
        start = max(gpu_free, t + lag)
        _box(ax, start, 0, work, 0.6, FREE, f"kernels {i}", size=8)
        gpu_free = start + work
        t += launch
        if i:  # the flag of step i-1: ready when its kernels ended
            ready = start
            cpu_wait(ax, t, ready)
            t = max(t, ready)
            _box(ax, t, 1, read, 0.6, READ)
            t += read
    ax.set_title("Check one step late: the next step is already queued, so the GPU idles less; the "
                 "CPU waits only as long as the GPU's step outlasts its own", fontsize=10, loc="left")
    for ax in axes:
        ax.set_yticks([0.3, 1.3], ["GPU", "CPU"])
        ax.set(ylim=(-0.2, 1.8), xlim=(0, max(end_top, gpu_free) + 0.2))
        for side in ("right", "top"):
            ax.spines[side].set_visible(False)
    axes[1].set_xlabel("time (schematic)")
    axes[1].set_xticks([])
    handles = [Rectangle((0, 0), 1, 1, facecolor=c, edgecolor=EDGE) for c in (USED, READ, WAIT, FREE)]
    handles.append(Rectangle((0, 0), 1, 1, facecolor=IDLE, alpha=0.25))
    fig.legend(handles, ["CPU launches a step", "CPU reads the stop flag", "CPU waits for the GPU",
                         "GPU runs the step", "GPU idle"],
               loc="lower center", ncol=5, frameon=False, fontsize=9)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    return fig


DIAGRAMS = {"allocator_segments.png": allocator, "static_cache_mask.png": static_cache,
            "sync_lanes.png": sync_lanes}


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    for name, draw in DIAGRAMS.items():
        fig = draw()
        fig.savefig(OUT / name, dpi=110, bbox_inches="tight")
        plt.close(fig)
        print(OUT / name)


if __name__ == "__main__":
    main()
