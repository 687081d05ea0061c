"""The shape of helpers/: no import cycle, and every import at the top of its file unless it is
lazy on purpose (listed here with its reason)."""
import ast
from pathlib import Path

HELPERS = Path(__file__).resolve().parent.parent / "helpers"

# (module, imported module): why the import sits inside a function.
LAZY = {
    ("model", "transformers"): "GPT-2's model class costs seconds; notebooks 03 and 09 build no model",
    ("static", "torch._dynamo.utils"): "dynamo takes ~1.5 s to import; most notebooks never compile",
    ("env", "pynvml"): "optional: NVML is only a fallback for the driver version",
    ("report", "IPython.display"): "optional: report.show_reference also runs in a plain terminal",
    ("floor", "."): "summary imports floor: 10's reading looks up 08's ladder rung at call time",
}
# Modules whose imports are lazy by design, said in their docstrings: the runner and the site
# builder start without torch or papermill (``--list``, ``--check-env``); the harness is the
# measurement core, kept by its own owner.
LAZY_MODULES = {"runner", "site", "harness"}


def trees():
    """Every module of helpers/ and helpers/course/, by its name under helpers ('course.stats')."""
    return {".".join(p.relative_to(HELPERS).with_suffix("").parts): ast.parse(p.read_text())
            for p in sorted(HELPERS.rglob("*.py")) if p.stem != "__init__"}


def local_imports(name, tree):
    """helpers modules imported at the top of a module (``from . import x``, ``from ..x import``),
    by their names under helpers."""
    package = name.split(".")[:-1]
    found = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level >= 1:
            base = package[:len(package) - (node.level - 1)]
            if node.module:
                found.add(".".join(base + node.module.split(".")))
            else:
                found |= {".".join(base + [a.name]) for a in node.names}
    return found


def test_helpers_have_no_import_cycle():
    graph = {name: local_imports(name, tree) for name, tree in trees().items()}
    state = {}

    def visit(name, path):
        if state.get(name) == "open":
            raise AssertionError(f"import cycle: {' -> '.join(path + [name])}")
        if state.get(name) != "done":
            state[name] = "open"
            for dep in graph.get(name, ()):
                visit(dep, path + [name])
            state[name] = "done"

    for name in graph:
        visit(name, [])


def test_imports_sit_at_the_top_unless_lazy_on_purpose():
    hidden = []
    for name, tree in trees().items():
        name = name.split(".")[-1]
        if name in LAZY_MODULES:
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for inner in ast.walk(node):
                    if isinstance(inner, (ast.Import, ast.ImportFrom)):
                        module = inner.module if isinstance(inner, ast.ImportFrom) else inner.names[0].name
                        module = ("." * getattr(inner, "level", 0)) + (module or "")
                        if (name, module) not in LAZY:
                            hidden.append(f"helpers/{name}.py:{inner.lineno} imports {module} "
                                          f"inside {node.name}()")
    assert not hidden, "move these imports to the top (or list them in LAZY with a reason):\n" + \
        "\n".join(hidden)


def test_importing_helpers_silences_tqdm_widget_warning():
    """In a Jupyter kernel without ipywidgets, transformers' import of tqdm.auto warns
    'IProgress not found' on stderr (every lesson's first cell on the GPU host showed it):
    importing helpers first must silence exactly that message and nothing else."""
    import subprocess
    import sys
    code = ("import warnings, helpers\n"
            "from tqdm import TqdmWarning\n"
            "warnings.warn(TqdmWarning('IProgress not found. Please update jupyter and ipywidgets.'))\n"
            "warnings.warn(UserWarning('a real warning'))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=str(Path(__file__).resolve().parents[1]))
    assert out.returncode == 0, out.stderr
    assert "IProgress" not in out.stderr
    assert "a real warning" in out.stderr
