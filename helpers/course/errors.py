"""The course's own error: a preset or parameter value that cannot be used.

It sits in a module of its own so that every module that checks a value (presets, allocator,
static) imports it at the top of the file without importing each other.
"""


class ParameterError(ValueError):
    """A preset or parameter value that cannot be used, with what is allowed instead."""
