"""training.pool_misses: the import hop reads the importers at the given commit, not the work tree."""

import subprocess

from training.pool_misses import imported_files


def _git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def test_import_hop_reads_the_commit(tmp_path):
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "__init__.py").write_text("")
    (repo / "pkg" / "printer.py").write_text("def show(x):\n    return str(x)\n")
    (repo / "pkg" / "other.py").write_text("def unused():\n    return 1\n")
    (repo / "pkg" / "api.py").write_text("from pkg.printer import show\n\n\ndef run(x):\n    return show(x)\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    first = _git(repo, "rev-parse", "HEAD")
    (repo / "pkg" / "api.py").write_text("from pkg.other import unused\n")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "two")

    git_dir = repo / ".git"
    assert imported_files(git_dir, first, ["pkg/api.py"]) == {"pkg/printer.py"}
    assert imported_files(git_dir, "HEAD", ["pkg/api.py"]) == {"pkg/other.py"}
    assert imported_files(git_dir, first, ["pkg/missing.py"]) == set()
