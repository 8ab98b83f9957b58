from indexers.walk import WalkStats, read_source, walk


def test_walk_honours_gitignore_nested_ignores_and_git_exclude(workspace):
    stats = WalkStats()
    paths = {e.path for e in walk(workspace, stats=stats)}
    assert "src/shop/cart.py" in paths and "web/app.ts" in paths and "server/main.go" in paths
    assert "build/out.py" not in paths  # root .gitignore
    assert "debug.log" not in paths  # *.log
    assert "web/generated/bundle.js" not in paths  # nested web/.gitignore
    assert "secret_notes.txt" not in paths  # .git/info/exclude
    assert not any(p.startswith("node_modules/") for p in paths)
    assert stats.skipped["ignored"] >= 3


def test_walk_skips_binaries_oversized_files_and_links_leaving_the_root(workspace):
    stats = WalkStats()
    paths = {e.path for e in walk(workspace, stats=stats)}
    assert "assets/logo.png" not in paths and stats.skipped["binary"] >= 1
    assert "huge.txt" not in paths and stats.skipped["too_large"] == 1
    assert "link_outside.txt" not in paths and stats.skipped["symlink_outside_root"] == 1


def test_invalid_utf8_is_decoded_with_replacement_not_fatal(workspace):
    text, sha = read_source(workspace.resolve(), "legacy/latin1.txt")
    assert "caf" in text and "\ufffd" in text and len(sha) == 64


def test_a_file_that_vanished_is_a_skip_reason(workspace):
    assert read_source(workspace.resolve(), "no_such_file.py") == "vanished_or_unreadable"


def test_mcp_retrieval_ignore_file_is_honoured(workspace):
    (workspace / ".mcp-retrieval-ignore").write_text("docs/\n")
    assert not any(e.path.startswith("docs/") for e in walk(workspace))
