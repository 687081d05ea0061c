"""The README's results section is rendered from figures/ only, and is up to date."""
import json

from helpers import report, results


def test_readme_results_match_the_committed_figures():
    readme = (results.repo_root() / "README.md").read_text()
    block = readme.split(report.START, 1)[1].split(report.END, 1)[0]
    assert block == "\n" + report.render(), "run `python -m helpers.report` after updating figures/"


def test_render_without_a_gpu_run(tmp_path):
    assert "No full-preset GPU run" in report.render(tmp_path)


def test_update_readme_rewrites_only_the_block(tmp_path):
    figures = tmp_path / "figures"
    (figures / "data").mkdir(parents=True)
    entry = {"notebook": "01_x.ipynb", "gpu": "NVIDIA Test", "date": "2026-01-02T00:00:00",
             "title": "A figure", "driver": "1", "cuda": "13", "torch": "t", "transformers": "x"}
    (figures / "manifest.json").write_text(json.dumps({"figures": {"01_x.png": entry}, "tables": {}}))
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{report.START}\nold\n{report.END}\noutro\n")
    assert report.update_readme(readme, figures)
    text = readme.read_text()
    assert text.startswith("intro\n") and text.endswith("outro\n") and "old" not in text
    assert "[A figure](figures/01_x.png) — `01_x.ipynb`, NVIDIA Test, 2026-01-02" in text
    assert not report.update_readme(readme, figures)
