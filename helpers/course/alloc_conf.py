"""The allocator settings this course accepts (``PYTORCH_ALLOC_CONF``), checked in pure Python.

No torch here: ``./run_all.sh`` checks the allocator variables with this module before any
interpreter imports torch, because a PyTorch built for CUDA may abort inside ``import torch``
on a value it cannot parse. ``helpers.allocator`` (notebook 03) applies the settings.
"""
from __future__ import annotations

import difflib

from .errors import ParameterError

ALLOC_ENV_VARS = ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF")
DEFAULT = "default"


def _bool(value):
    if value not in ("True", "False"):
        raise ValueError
    return value == "True"


def _split_mb(value):
    number = int(value)
    if number <= 20:
        raise ValueError
    return number


def _gc_threshold(value):
    number = float(value)
    if not 0.0 < number < 1.0:
        raise ValueError
    return number


def _power_of_two(value):
    number = int(value)
    if number < 1 or number > 64 or number & (number - 1):
        raise ValueError
    return number


def _backend(value):
    if value not in ("native", "cudaMallocAsync"):
        raise ValueError
    return value


# The keys this course accepts, with what each value may be.
OPTIONS = {
    "expandable_segments": ("True or False", _bool),
    "max_split_size_mb": ("an integer > 20 (MiB)", _split_mb),
    "garbage_collection_threshold": ("a number strictly between 0 and 1", _gc_threshold),
    "roundup_power2_divisions": ("a power of two from 1 to 64", _power_of_two),
    "backend": ("native or cudaMallocAsync", _backend),
    "release_lock_on_cudamalloc": ("True or False", _bool),
}


def parse_alloc_conf(conf) -> dict:
    """The settings in ``conf`` ("key:value,key:value") as a dict, checked key by key; raises
    ParameterError naming the allowed keys and values. ``"default"`` or ``""`` gives ``{}``."""
    if not isinstance(conf, str):
        raise ParameterError(f"an allocator setting must be a string like "
                             f"'expandable_segments:True', got {conf!r}")
    text = conf.strip()
    if text in ("", DEFAULT):
        return {}
    allowed = ", ".join(f"{k} ({v[0]})" for k, v in OPTIONS.items())
    settings = {}
    for item in text.split(","):
        key, sep, value = (part.strip() for part in item.partition(":"))
        if not sep or not key or not value:
            raise ParameterError(f"allocator setting {conf!r}: {item.strip()!r} is not "
                                 f"'key:value'. Write settings as 'key:value,key:value' with "
                                 f"keys: {allowed}")
        if key not in OPTIONS:
            close = difflib.get_close_matches(key, OPTIONS, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ParameterError(f"allocator setting {conf!r}: unknown key {key!r}.{hint} "
                                 f"Allowed keys: {allowed}")
        if key in settings:
            raise ParameterError(f"allocator setting {conf!r}: {key!r} is given twice")
        what, check = OPTIONS[key]
        try:
            settings[key] = check(value)
        except ValueError:
            raise ParameterError(f"allocator setting {conf!r}: {key} must be {what}, "
                                 f"got {value!r}") from None
    if settings.get("backend") == "cudaMallocAsync" and settings.get("expandable_segments"):
        raise ParameterError(f"allocator setting {conf!r}: expandable_segments works only with "
                             "the native backend, not cudaMallocAsync")
    return settings
