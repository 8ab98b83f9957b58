import shutil
import subprocess

import pytest

from mcp_retrieval.indexers.walk import WalkStats, read_source, walk
from mcp_retrieval.workspace import Workspace


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


def test_a_byte_order_mark_is_dropped_and_utf16_is_read_as_text(workspace):
    import os
    (workspace / "bom.py").write_bytes(b"\xef\xbb\xbfdef with_bom():\n    pass\n")
    (workspace / "Form.cs").write_bytes("class Form1 { void Load() {} }\n".encode("utf-16"))  # BOM first
    (workspace / "noise.cs").write_bytes(b"\xff\xfe" + os.urandom(4000))
    assert read_source(workspace, "bom.py")[0] == "def with_bom():\n    pass\n"
    assert read_source(workspace, "Form.cs")[0] == "class Form1 { void Load() {} }\n"
    assert read_source(workspace, "noise.cs") == "binary"


KEY = ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
       "QyNTUxOQAAACBexampleexampleexampleexampleexampleexampleAAAA\n-----END OPENSSH PRIVATE KEY-----\n")


def test_credentials_are_never_indexed_nor_served_and_a_private_key_loses_its_body(engine, workspace):
    """A server started in a folder with a `.env`, a deploy key or `~/.ssh` put them in answers."""
    files = {".env": "DATABASE_URL=postgres://admin:hunter2@db.internal/prod\n",
             "deploy/.env.production": "DATABASE_URL=postgres://admin:hunter2@db.internal/prod\n",
             "deploy/tls.pem": KEY, "deploy/server.key": KEY, ".ssh/id_ed25519": KEY, ".aws/credentials": "[default]\n",
             ".env.example": "DATABASE_URL=postgres://user:password@localhost/dev\n"}
    for rel, text in files.items():
        (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
        (workspace / rel).write_text(text)
    stats = WalkStats()
    paths = {e.path for e in walk(workspace, stats=stats)}
    assert ".env.example" in paths and not paths & (set(files) - {".env.example"})
    assert stats.skipped["credentials"] == 6
    (workspace / "tests").mkdir(exist_ok=True)
    code = 'def load_test_key():\n    return """' + KEY + '"""\n\n\ndef after_the_key():\n    return 1\n'
    (workspace / "tests" / "test_keys.py").write_text(code)
    text, _ = read_source(workspace.resolve(), "tests/test_keys.py")
    assert "b3BlbnNz" not in text and "(private key not indexed)" in text
    assert len(text.split("\n")) == len(code.split("\n")) and text.split("\n")[6:] == code.split("\n")[6:]
    engine.reindex()
    window = Workspace.single(engine).context("database url password private key load_test_key", budget_tokens=4000).window
    assert "hunter2" not in window and "b3BlbnNz" not in window and "load_test_key" in window
    # a key written into an indexed file after indexing: the freshness gate's re-read blanks it too
    keys = workspace / "src" / "shop" / "keys.py"
    keys.write_text('def fresh_key():\n    return 1\n')
    engine.reindex()
    keys.write_text('def fresh_key():\n    return """' + KEY + '"""\n')
    window = Workspace.single(engine).context("fresh_key", budget_tokens=2000).window
    assert "fresh_key" in window and "b3BlbnNz" not in window


def test_a_file_that_vanished_is_a_skip_reason(workspace):
    assert read_source(workspace.resolve(), "no_such_file.py") == "vanished_or_unreadable"


def test_mcp_retrieval_ignore_file_is_honoured(workspace):
    (workspace / ".mcp-retrieval-ignore").write_text("docs/\n")
    assert not any(e.path.startswith("docs/") for e in walk(workspace))


GITIGNORES = {
    ".gitignore": "*\n!*.*\n!*/\n!**/Makefile\n**/logs\n/anchored.txt\nbuild/\n*.tmp\n!keep.tmp\n",
    "pkg/.gitignore": "secret*\n!secret_ok.go\n/local_only.go\n",
    "pkg/deep/.gitignore": "!*.tmp\n",
}
FILES = ["Makefile", "README", "main.go", "anchored.txt", "sub/anchored.txt", "build/out.go", "pkg/build/x.go",
         "a.tmp", "keep.tmp", "pkg/secret.go", "pkg/secret_ok.go", "pkg/local_only.go", "pkg/sub/local_only.go",
         "pkg/deep/b.tmp", "core/logs/app.go", "core/logx/logx.go", "core/noext", "tools/Makefile"]


def make_ignore_tree(root):
    for rel, text in GITIGNORES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    for rel in FILES:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("package x\n")


def test_ignore_semantics_are_gits_own_inside_and_outside_a_git_work_tree(tmp_path):
    import shutil
    import subprocess

    if shutil.which("git") is None:
        import pytest
        pytest.skip("git is not installed")
    repo, plain = tmp_path / "repo", tmp_path / "plain"
    for root in (repo, plain):
        root.mkdir()
        make_ignore_tree(root)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    out = subprocess.run(["git", "-C", str(repo), "ls-files", "--cached", "--others", "--exclude-standard"],
                         capture_output=True, text=True, check=True).stdout.split()
    expected = {p for p in out if not p.endswith(".gitignore")}
    assert "core/logx/logx.go" in expected and "pkg/secret_ok.go" in expected  # re-included by negations
    assert "core/logs/app.go" not in expected and "pkg/local_only.go" not in expected
    assert {e.path for e in walk(repo)} == expected
    assert {e.path for e in walk(plain)} == expected  # outside git: git's rules through an empty repository
    assert {e.path for e in walk(plain, use_git=False)} == expected  # no git at all: pathspec, `*` + `!*/` too


def test_a_scoped_walk_lists_only_its_paths_with_every_ignore_rule_still_applied(tmp_path, monkeypatch):
    """A watcher's batch walks its own paths (not the workspace); the folders' ignore files above
    them still apply, and a path is taken literally, never as a glob."""
    import shutil
    import subprocess

    repo, plain = tmp_path / "repo", tmp_path / "plain"
    for root in (repo, plain):
        root.mkdir()
        make_ignore_tree(root)
        (root / "pkg" / "a*.go").write_text("package x\n")
    if shutil.which("git"):
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
    scopes = ["pkg", "main.go", "core/logs/app.go", "a*.go", "gone.go"]
    expected = {"main.go", "pkg/a*.go", "pkg/secret_ok.go", "pkg/sub/local_only.go", "pkg/deep/b.tmp"}
    for root in (repo, plain):
        whole = {e.path for e in walk(root)}
        assert {e.path for e in walk(root, scopes=scopes)} == expected == {p for p in whole if p in expected
                                                                          or p.startswith("pkg/")}
        assert {e.path for e in walk(root, use_git=False, scopes=scopes)} == expected  # without git
        assert {e.path for e in walk(root, scopes=["."])} == whole
        assert list(walk(root, scopes=[])) == []
        monkeypatch.setattr("mcp_retrieval.indexers.listing.MAX_PATHSPECS", 2)  # too many for git's argv
        assert {e.path for e in walk(root, scopes=scopes)} == expected
        monkeypatch.undo()
    simple = tmp_path / "simple"
    for rel in ("a/x.py", "a/y.log", "a/deep/w.py", "b/z.py", ".gitignore"):
        (simple / rel).parent.mkdir(parents=True, exist_ok=True)
        (simple / rel).write_text("*.log\n" if rel == ".gitignore" else "x = 1\n")
    assert {e.path for e in walk(simple, use_git=False, scopes=["a"])} == {"a/x.py", "a/deep/w.py"}
    assert {e.path for e in walk(simple, use_git=False, scopes=["a/deep/w.py", "b"])} == {"a/deep/w.py", "b/z.py"}


def test_without_git_the_walk_and_the_watcher_list_what_git_lists_on_random_trees(tmp_path):
    """Random trees with two nested ignore files each, the built-in matcher against `git ls-files`:
    the walk, and the watcher asking of each file alone (fresh rules, as for a changed path)."""
    import random
    import shutil
    import subprocess

    from mcp_retrieval.indexers.watch import Watcher

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    rules = ["*", "!*/", "*\n!*/", "*\n!*/\n!*.go", "*.go", "!*.go", "gen/", "/gen", "!gen/keep.go", "**/logs",
             "logs/", "a/**", "!a/b/", "*.tmp", "!keep.tmp", "/top.txt", "sub/*", "!sub/x.go", "**/deep/**",
             "!**/deep/*.go", "x*", "!x1.go", "a/b", "*/c/", "?.go", "[ab].go", "!*.*", "docs", "!docs/"]
    folders, names = ["a", "b", "c", "gen", "logs", "sub", "deep", "docs"], ["x.go", "x1.go", "keep.go", "keep.tmp",
                                                                          "y.tmp", "top.txt", "a.go", "noext"]
    differ = []
    for trial in range(200):
        rng, root = random.Random(trial), tmp_path / str(trial)
        paths = {"/".join(rng.choice(folders) for _ in range(rng.randint(0, 3))) for _ in range(25)}
        files = sorted({f"{p}/{rng.choice(names)}".lstrip("/") for p in paths})
        for rel in files:
            if not any(rel.startswith(other + "/") for other in files):  # a name is a file or a folder
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                (root / rel).write_text("package x\n")
        places = [""] + sorted({str(p.parent.relative_to(root)) for p in root.rglob("*") if p.is_file()} - {"."})
        for place in rng.sample(places, min(len(places), 2)):
            (root / place / ".gitignore").write_text("\n".join(rng.sample(rules, rng.randint(1, 5))) + "\n")
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        listed = subprocess.run(["git", "-C", str(root), "ls-files", "--cached", "--others", "--exclude-standard"],
                                capture_output=True, text=True, check=True).stdout.split()
        expected = {p for p in listed if not p.endswith(".gitignore")}
        watcher = Watcher(root, lambda paths: None)
        on_disk = [p.relative_to(root).as_posix() for p in root.rglob("*")
                   if p.is_file() and ".git" not in p.relative_to(root).parts and p.name != ".gitignore"]
        if expected != {e.path for e in walk(root, use_git=False)} \
                or expected != {rel for rel in on_disk if watcher.relevant(str(watcher.root / rel))}:
            differ.append(trial)
    assert differ == []  # 9 of 200 before `*` + `!*/` was read as git reads it; 35 of 1,000 for the watcher before 58c


@pytest.mark.parametrize("use_git", [True, False])
def test_everything_inside_a_folder_leaves_the_folder_to_its_own_rules(tmp_path, use_git):
    """`**/deep/**` ignores what is inside `deep`, not `deep` itself: its own ignore file may keep
    a file (the built-in matcher pruned the folder, read as `deep/`)."""
    if use_git and shutil.which("git") is None:
        pytest.skip("git is not installed")
    (tmp_path / "docs" / "deep" / "more").mkdir(parents=True)
    (tmp_path / ".gitignore").write_text("**/deep/**\n")
    (tmp_path / "docs" / "deep" / ".gitignore").write_text("!*.*\n")
    for rel in ("docs/deep/keep.tmp", "docs/deep/noext", "docs/deep/more/inner.tmp", "docs/top.tmp"):
        (tmp_path / rel).write_text("x\n")
    if use_git:
        subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    assert {e.path for e in walk(tmp_path, use_git=use_git)} == {"docs/deep/keep.tmp", "docs/top.tmp"}


@pytest.mark.parametrize("use_git", [True, False])
def test_a_negated_folder_does_not_bring_back_the_folders_inside_it(tmp_path, use_git):
    """`!docs/` keeps `docs` itself; `*/c/` still ignores `docs/c` (pathspec's `docs` also matched
    `docs/c`, and the negation re-included it)."""
    if use_git and shutil.which("git") is None:
        pytest.skip("git is not installed")
    (tmp_path / "docs" / "c").mkdir(parents=True)
    (tmp_path / ".gitignore").write_text("*/c/\n!docs/\n")
    for rel in ("docs/c/y.tmp", "docs/z.tmp"):
        (tmp_path / rel).write_text("x\n")
    if use_git:
        subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    assert {e.path for e in walk(tmp_path, use_git=use_git)} == {"docs/z.tmp"}


@pytest.mark.parametrize("use_git", [True, False])
def test_a_deeper_negated_folder_does_not_bring_back_files_a_rule_above_ignores(tmp_path, use_git):
    """`!docs/` in `sub` keeps the folder `sub/docs`; the root's `*.tmp` still ignores the files in
    it (pathspec read `!docs/` as about every file inside `docs` and re-included `a.tmp`)."""
    from mcp_retrieval.indexers.watch import Watcher

    if use_git and shutil.which("git") is None:
        pytest.skip("git is not installed")
    (tmp_path / "sub" / "docs").mkdir(parents=True)
    (tmp_path / ".gitignore").write_text("*.tmp\n")
    (tmp_path / "sub" / ".gitignore").write_text("!docs/\n")
    for rel in ("sub/docs/a.tmp", "sub/docs/b.py"):
        (tmp_path / rel).write_text("x\n")
    if use_git:
        subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    assert {e.path for e in walk(tmp_path, use_git=use_git)} == {"sub/docs/b.py"}
    watcher = Watcher(tmp_path, lambda paths: None)
    assert watcher.relevant(str(watcher.root / "sub/docs/a.tmp")) is None
    assert watcher.relevant(str(watcher.root / "sub/docs/b.py")) == "sub/docs/b.py"


@pytest.mark.parametrize("use_git", [True, False])
def test_an_ignore_file_with_lines_that_are_not_patterns_keeps_its_other_rules(tmp_path, use_git):
    """`!` alone or `[z-a]` made pathspec raise and the walk with it; git leaves such lines out."""
    (tmp_path / "sub").mkdir()
    for rel in ("a.py", "debug.log", "sub/b.py", "sub/c.tmp"):
        (tmp_path / rel).write_text("x = 1\n")
    (tmp_path / ".mcp-retrieval-ignore").write_text("!\n*.log\n[z-a]\n")
    (tmp_path / "sub" / ".gitignore").write_text("\\\n*.tmp\n")
    assert {e.path for e in walk(tmp_path.resolve(), use_git=use_git)} == {"a.py", "sub/b.py"}


def test_the_rules_on_the_way_to_a_path_include_its_own_folders_and_the_roots():
    """The watcher asks of one changed path at a time: the root's and its own folder's ignore
    files apply to it (they were read only for deeper paths)."""
    import tempfile
    from pathlib import Path

    from mcp_retrieval.indexers.walk import IgnoreRules

    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder).resolve()
        (root / "sub").mkdir()
        (root / ".gitignore").write_text("*.log\n")
        (root / "sub" / ".gitignore").write_text("*.tmp\n")
        rules = IgnoreRules(root)
        for rel, ignored in (("debug.log", True), ("a.py", False), ("sub/c.tmp", True), ("sub/b.py", False),
                             ("sub/x.log", True)):
            rules.enter_parents(rel)
            assert rules.ignored(rel, is_dir=False) is ignored, rel


def test_a_committed_file_in_a_folder_named_like_build_output_is_source(tmp_path):
    """`build`, `env` and `target` name output folders and source alike (commons-io's `io/build`
    package, uutils's `src/uu/env`): what git tracks there is indexed, and the watcher passes its
    changes on; what it does not track there, and dependencies and bundles even when tracked, are
    not. Outside git, a folder with the project's `.gitignore` (an archive, a copy) is read the same
    way: its rules drop the outputs; without one, the folders are pruned by name."""
    from mcp_retrieval.indexers.watch import Watcher

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    committed = ["src/uu/env/src/env.rs", "src/main/java/org/apache/commons/io/build/AbstractOrigin.java",
                 "crates/target/src/lib.rs", "node_modules/left-pad/index.js", "dist/axios.js", "app.py"]
    source = {"src/uu/env/src/env.rs", "crates/target/src/lib.rs", "app.py",
              "src/main/java/org/apache/commons/io/build/AbstractOrigin.java"}
    outputs = ["build/lib/app.py", "env/lib/site.py", "target/debug/build.rs"]
    repo, exported = tmp_path / "repo", tmp_path / "exported"
    for root in (repo, exported):
        for rel in [*committed, *outputs]:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text("x = 1\n")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "-f", *committed], check=True)
    subprocess.run([*git, "commit", "-qm", "c"], check=True)
    assert {e.path for e in walk(repo)} == source
    watcher = Watcher(repo, on_change=lambda paths: None)
    assert watcher.relevant(str(repo / "src/uu/env/src/env.rs")) == "src/uu/env/src/env.rs"
    assert watcher.relevant(str(repo / "node_modules/left-pad/index.js")) is None

    assert {e.path for e in walk(exported)} == {e.path for e in walk(exported, use_git=False)} == {"app.py"}
    (exported / ".gitignore").write_text("/build/\n/env/\n/target/\n")
    assert {e.path for e in walk(exported)} == {e.path for e in walk(exported, use_git=False)} == source


def test_a_source_file_past_a_megabyte_is_read_and_yarns_own_folder_is_not(tmp_path):
    """A project's central class can pass the 1 MB limit (RxJava's `Flowable.java`, 1.2 MB):
    source in a parsed language is read up to four times it; other text is not. Yarn's `.yarn/`
    (its releases, plugins and cache) is dependencies."""
    methods = "".join(f"    public Flowable<T> op{i}(int n) {{ return this.take(n + {i}); }}\n" for i in range(17_000))
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "Flowable.java").write_text("public abstract class Flowable<T> {\n" + methods + "}\n")
    (tmp_path / "src" / "log.txt").write_text("x" * 1_100_000)
    (tmp_path / ".yarn" / "releases").mkdir(parents=True)
    (tmp_path / ".yarn" / "releases" / "yarn-4.1.0.cjs").write_text("module.exports = {};\n")
    stats = WalkStats()
    assert (tmp_path / "src" / "Flowable.java").stat().st_size > 1_000_000
    assert {e.path for e in walk(tmp_path, stats=stats)} == {"src/Flowable.java"}
    assert stats.skipped["too_large"] == 1
    text, _ = read_source(tmp_path.resolve(), "src/Flowable.java")
    assert text.endswith("}\n")


def test_an_index_put_inside_the_root_is_never_indexed(tmp_path):
    from mcp_retrieval import Config, Engine
    from mcp_retrieval.indexers.embed import HashEmbedder
    from mcp_retrieval.indexers.watch import Watcher

    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def serve_requests():\n    pass\n")
    config = Config.resolve(root, root / ".mcp-index", persist_sessions=False)
    config.cache_dir = root / ".mcp-cache"
    engine = Engine(config, embedder=HashEmbedder())
    try:
        engine.reindex()
        result = engine.reindex(full=True)  # the index and cache now hold text files of their own
        assert set(engine.store.files()) == {"src/app.py"}
        assert result.skipped.get("index_folder", 0) > 0
        watcher = Watcher(root, engine.sync_paths, own=engine.indexer.own_folders())
        assert watcher.relevant(str(root / ".mcp-index" / "index.db")) is None
        assert watcher.relevant(str(root / "src" / "app.py")) == "src/app.py"
    finally:
        engine.close()


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
@pytest.mark.parametrize("outer_is_a_repository", [False, True], ids=["folder-of-clones", "clone-inside-a-repo"])
def test_repositories_nested_in_the_root_are_listed_by_their_own_git(tmp_path, outer_is_a_repository):
    root = tmp_path / "work"
    for repo, files in {"api": {"server.py": "x\n", "build/out.py": "x\n", ".gitignore": "build/\n"},
                        "web": {"app.js": "x\n", "vendor/inner/lib.js": "x\n"},
                        "web/vendor/inner": {}}.items():
        for rel, text in files.items():
            (root / repo / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / repo / rel).write_text(text)
        subprocess.run(["git", "init", "-q", str(root / repo)], check=True)
    (root / "notes.md").write_text("# notes\n")
    (root / "scratch").mkdir()
    (root / "scratch" / "tmp.py").write_text("x\n")
    subprocess.run(["git", "init", "-q", str(root / "scratch")], check=True)
    (root / ".gitignore").write_text("scratch/\n")  # an ignored clone stays out, a saved file there too
    if outer_is_a_repository:
        subprocess.run(["git", "init", "-q", str(root)], check=True)
    listed = {e.path for e in walk(root)}
    # the nested repositories' own ignore rules hold; `vendor/` is pruned, and a repository inside it too
    assert listed == {"notes.md", "api/server.py", "web/app.js"}
    (root / "api" / "routes.py").write_text("x\n")  # a saved file inside one: a scoped walk finds it
    assert {e.path for e in walk(root, scopes=["api/routes.py"])} == {"api/routes.py"}
    assert {e.path for e in walk(root, scopes=["api"])} == {"api/server.py", "api/routes.py"}
    assert list(walk(root, scopes=["scratch/tmp.py"])) == []


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_populated_submodule_is_listed_by_its_own_git(tmp_path):
    def git(*args, cwd):
        subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", "-c", "protocol.file.allow=always",
                        *args], cwd=cwd, check=True, capture_output=True)
    lib, app = tmp_path / "lib", tmp_path / "app"
    for repo, files in {lib: {"parse.py": "x\n"}, app: {"main.py": "x\n"}}.items():
        repo.mkdir()
        for rel, text in files.items():
            (repo / rel).write_text(text)
        git("init", "-q", cwd=repo)
        git("add", "-A", cwd=repo)
        git("commit", "-qm", "first", cwd=repo)
    git("submodule", "add", "-q", str(lib), "deps/lib", cwd=app)
    assert {e.path for e in walk(app)} == {".gitmodules", "main.py", "deps/lib/parse.py"}


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_worktree_of_the_roots_own_repository_inside_it_is_not_listed_again(tmp_path):
    def git(*args):
        subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=tmp_path,
                       check=True, capture_output=True)
    (tmp_path / "main.py").write_text("x\n")
    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "first")
    git("worktree", "add", "-q", ".worktrees/fix")  # untracked, not ignored: git shows `.worktrees/fix/`
    assert {e.path for e in walk(tmp_path)} == {"main.py"}
    assert list(walk(tmp_path, scopes=[".worktrees/fix/main.py"])) == []


@pytest.mark.parametrize("use_git", [True, False])
def test_what_editors_and_patch_tools_leave_beside_a_file_is_not_indexed_unless_committed(tmp_path, use_git):
    """Backups, swap and lock files, safe-write temporaries and a patch's rejects repeat a file's
    definitions as they were (`cart.py~` answered beside `cart.py`)."""
    root = tmp_path / "r"
    (root / "src").mkdir(parents=True)
    code = "def total(cart):\n    return sum(cart)\n"
    leftovers = ["cart.py~", "#cart.py#", ".cart.py.swp", "cart.py.orig", "cart.py.rej", "cart.py.bak",
                 "cart.py___jb_tmp___", "4913"]
    for name in ["cart.py", "legacy.c.orig", *leftovers]:
        (root / "src" / name).write_text(code)
    if use_git:
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        subprocess.run(["git", "-C", str(root), "add", "src/legacy.c.orig"], check=True)  # the project's own
    stats = WalkStats()
    assert {e.path for e in walk(root, stats=stats, use_git=use_git)} == \
        {"src/cart.py"} | ({"src/legacy.c.orig"} if use_git else set())
    assert stats.skipped["editor_leftover"] == len(leftovers) + (0 if use_git else 1)


def test_a_file_with_a_line_no_one_reads_is_skipped_as_minified(tmp_path):
    """A minified bundle or an SVG's one-line path is no answer and held megabytes in one chunk:
    skipped with its reason, as a file that changes into one is dropped; long lines of ordinary
    code (a 5,000-character table) are read as ever."""
    from tests.conftest import engine_over
    from mcp_retrieval.indexers.walk import MAX_LINE_CHARS

    bundle = "var a=1;" + ";".join(f"function f{i}(x){{return x+{i}}}" for i in range(2000)) + "\n"
    assert len(bundle) > MAX_LINE_CHARS
    engine = engine_over({"web/app.js": "function small() { return 1 }\n",
                          "art/plot.svg": "<svg><path d='" + "L 1 2 " * 4000 + "'/></svg>\n",
                          "src/table.py": "TABLE = [" + ", ".join(map(str, range(1200))) + "]\n\ndef lookup_entry(i):\n"
                                          "    return TABLE[i]\n"}, tmp_path)
    try:
        (engine.config.root / "web" / "app.js").write_text(bundle)
        result = engine.reindex()
        assert result.skipped.get("minified") == 2 and result.files_removed == 1
        assert set(engine.store.files()) == {"src/table.py"}  # the bundle's older, readable version is gone
        assert Workspace.single(engine).packet("lookup_entry").items[0].path == "src/table.py"
    finally:
        engine.close()
