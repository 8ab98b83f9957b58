import json
import os
import time
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_retrieval import Config, Engine
from mcp_retrieval.cli import build_parser

pytestmark = pytest.mark.slow  # servers, subprocesses or builds: left out of `-m 'not slow'`

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def test_every_cli_command_is_documented_in_the_readme():
    commands = build_parser()._subparsers._group_actions[0].choices
    for name in commands:
        assert re.search(rf"mcp-retrieval {name}\b", README), name


def test_the_readme_gives_exactly_two_setup_commands():
    block = README.split("## Set up", 1)[1].split("##", 1)[0]
    assert len(re.findall(r"^```(?:bash|sh)$", block, flags=re.M)) == 2


def run_cli(*args, env_extra=None, tmp_path):
    env = {"MCP_RETRIEVAL_CACHE_DIR": str(tmp_path / "cache"), "MCP_RETRIEVAL_EMBEDDER": "none", "PATH": "/usr/bin:/bin",
           **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "mcp_retrieval", *args], capture_output=True, text=True, env=env,
                          timeout=300)


def test_index_status_context_packet_and_graph_from_the_shell(workspace, tmp_path):
    common = ["--root", str(workspace), "--index-dir", str(tmp_path / "idx")]
    r = run_cli("index", *common, tmp_path=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["files_changed"] >= 8
    r = run_cli("status", *common, "--json", tmp_path=tmp_path)
    assert json.loads(r.stdout)["files"] >= 8
    r = run_cli("context", "apply_discount", *common, "--json", tmp_path=tmp_path)
    assert json.loads(r.stdout)["chunks"][0]["symbol"] == "apply_discount"
    r = run_cli("packet", "handleCheckout", *common, tmp_path=tmp_path)
    assert r.returncode == 0 and "server/main.go" in r.stdout
    r = run_cli("graph", "Cart.subtotal", "--relation", "callers", *common, "--json", tmp_path=tmp_path)
    assert "Cart.total" in r.stdout
    r = run_cli("context", "", *common, tmp_path=tmp_path)
    assert r.returncode == 2 and "query" in r.stderr


def test_a_new_index_with_vectors_says_nothing_on_stderr(workspace, tmp_path):
    """LanceDB's own log would report every new table ("No existing dataset at …") on stderr."""
    common = ["--root", str(workspace), "--index-dir", str(tmp_path / "idx")]
    r = run_cli("index", *common, env_extra={"MCP_RETRIEVAL_EMBEDDER": "static"}, tmp_path=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["files_changed"] >= 8
    assert "lance" not in r.stderr.lower(), r.stderr


def test_a_question_from_the_shell_sees_the_files_changed_since_the_last_run(workspace, tmp_path):
    """No watcher runs behind the shell: each question indexes what changed first."""
    common = ["--root", str(workspace), "--index-dir", str(tmp_path / "idx")]
    assert run_cli("index", *common, tmp_path=tmp_path).returncode == 0
    (workspace / "shipping.py").write_text("def parcel_tariff_for_zone(zone):\n    return zone.tariff * 2\n")
    r = run_cli("packet", "parcel_tariff_for_zone", *common, tmp_path=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "shipping.py" in r.stdout.splitlines()[1] and "fresh=true" in r.stdout.splitlines()[1]


def test_a_missing_root_is_a_one_line_error(tmp_path):
    r = run_cli("status", "--root", str(tmp_path / "nope"), tmp_path=tmp_path)
    assert r.returncode == 2 and "not a directory" in r.stderr


@pytest.mark.parametrize("command", [["serve"], ["packet", "where is the cart total"]])
def test_an_index_folder_that_cannot_be_made_is_a_one_line_error(workspace, tmp_path, command):
    in_the_way = tmp_path / "a_file"
    in_the_way.write_text("")
    r = run_cli(*command, "--root", str(workspace), "--index-dir", str(in_the_way), tmp_path=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"cannot open the index of ws at {in_the_way}" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_a_mistyped_embedder_is_a_one_line_error_not_the_slow_model(workspace, tmp_path):
    r = run_cli("status", "--root", str(workspace), env_extra={"MCP_RETRIEVAL_EMBEDDER": "statc"}, tmp_path=tmp_path)
    assert r.returncode == 2 and "embedder must be one of static, minilm, none; got 'statc'" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


@pytest.mark.timeout(180)
def test_closing_stdin_during_a_full_index_ends_the_server_and_leaves_an_index_that_answers(tmp_path):
    from tests.test_fresh_and_safe import make_big_workspace

    root = tmp_path / "big"
    make_big_workspace(root, n_files=1500)
    env = {**os.environ, "MCP_RETRIEVAL_CACHE_DIR": str(tmp_path / "cache"), "MCP_RETRIEVAL_EMBEDDER": "hash"}
    proc = subprocess.Popen([sys.executable, "-m", "mcp_retrieval", "serve", "--root", str(root), "--index-dir",
                             str(tmp_path / "idx"), "--no-watch"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env)
    time.sleep(3)  # the background index is under way
    proc.stdin.close()
    proc.wait(timeout=30)  # was ~90 s: the index now stops between files
    cfg = Config.resolve(root, tmp_path / "idx", persist_sessions=False, embedder="hash")
    cfg.cache_dir = tmp_path / "cache"
    engine = Engine(cfg)
    engine.reindex()
    assert engine.status().files == 1500
    engine.close()


def test_without_root_the_workspace_is_the_git_work_tree_around_the_current_directory(tmp_path, monkeypatch):
    import shutil

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    (repo / "src" / "pkg").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    monkeypatch.chdir(repo / "src" / "pkg")
    assert Config.resolve(index_dir=tmp_path / "idx").root == repo.resolve()
    outside = tmp_path / "plain"
    outside.mkdir()
    monkeypatch.chdir(outside)
    assert Config.resolve(index_dir=tmp_path / "idx").root == outside.resolve()


def test_a_question_from_the_shell_does_not_load_the_mcp_sdk(workspace, tmp_path):
    """The SDK costs a one-shot `packet` or `context` 0.6 s (BENCHMARKS 63h) and renders nothing the
    shell prints (`mcp_retrieval.render` does)."""
    probe = ("import sys, runpy; sys.argv = ['mcp-retrieval', 'packet', 'handleCheckout', '--root', sys.argv[1], "
             "'--index-dir', sys.argv[2]]\n"
             "try:\n    runpy.run_module('mcp_retrieval', run_name='__main__')\nexcept SystemExit:\n    pass\n"
             "print('SDK LOADED' if 'mcp.server' in sys.modules else 'SDK NOT LOADED')")
    env = {"MCP_RETRIEVAL_CACHE_DIR": str(tmp_path / "cache"), "MCP_RETRIEVAL_EMBEDDER": "none", "PATH": "/usr/bin:/bin"}
    r = subprocess.run([sys.executable, "-c", probe, str(workspace), str(tmp_path / "idx")], capture_output=True,
                       text=True, env=env, timeout=300)
    assert "server/main.go" in r.stdout, r.stderr
    assert r.stdout.rstrip().endswith("SDK NOT LOADED"), r.stdout


def test_status_names_a_configured_root_that_is_not_served(workspace, tmp_path):
    (tmp_path / ".mcp-retrieval.toml").write_text(f'roots = ["{workspace}", "client=../not-cloned"]\n')
    r = subprocess.run([sys.executable, "-m", "mcp_retrieval", "status"], capture_output=True, text=True, cwd=tmp_path,
                       env={"MCP_RETRIEVAL_CACHE_DIR": str(tmp_path / "cache"), "MCP_RETRIEVAL_EMBEDDER": "none",
                            "PATH": "/usr/bin:/bin", "XDG_CACHE_HOME": str(tmp_path / "xdg")}, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "not served: client: root " in r.stdout and "not-cloned is not a directory" in r.stdout
