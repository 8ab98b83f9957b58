import pytest
from mcp_retrieval.classify import classify
from mcp_retrieval.extract import extract
from mcp_retrieval.understand import deterministic
from mcp_retrieval.workspace import Workspace
from mcp_retrieval.rules import Rules

TRACEBACK = '''Unit equality comparison with None raises TypeError
```
/Users/me/anaconda3/lib/python3.5/site-packages/astropy/units/core.py in __eq__(self, other)
Traceback (most recent call last):
  File "/site-packages/astropy/units/core.py", line 1701, in __eq__
    other = Unit(other, parse_strict='silent')
TypeError: None is not a valid Unit
```
See `UnrecognizedUnit` and astropy.units.core for details.
'''


def test_extract_finds_frames_paths_dotted_names_identifiers_and_errors():
    a = extract(TRACEBACK, ["src/app.py"])
    ipython = "/Users/me/anaconda3/lib/python3.5/site-packages/astropy/units/core.py"  # its header: no line marked
    assert a.frames == [("/site-packages/astropy/units/core.py", 1701, "__eq__"), (ipython, 0, "__eq__")]
    assert a.paths[-2:] == ["/site-packages/astropy/units/core.py", ipython]
    assert "astropy.units.core" in a.dotted
    assert {"UnrecognizedUnit", "__eq__", "Unit"} <= set(a.identifiers)
    assert "comparison" not in a.identifiers and "None" not in a.identifiers  # prose is not an anchor
    assert a.errors and a.errors[0].startswith("TypeError: None is not a valid Unit")
    assert a.active_files == ["src/app.py"]


def test_classify_names_the_questions_class():
    assert classify("Session.request").name == "identifier"
    assert classify("src/requests/sessions.py").name == "path"
    assert classify(TRACEBACK).name == "debug"
    assert classify("how do I configure retries").name == "procedural"
    assert classify("give me an overview of the architecture").name == "broad"
    assert classify("what is the relationship between Session and Adapter").name == "multi_hop"
    assert classify("what is the relationship between Session and Adapter").graph_hops == 2


def test_understanding_uses_agent_sub_queries_else_splits_clear_conjunctions():
    u = deterministic("anything", ["where is auth configured", "", "how are retries counted", "x", "y"])
    assert u.source == "agent" and u.sub_queries[:2] == ["where is auth configured", "how are retries counted"]
    assert len(u.sub_queries) <= 3
    u = deterministic("where are cookies stored; how are redirects followed", None)
    assert u.source == "deterministic" and len(u.sub_queries) == 2
    u = deterministic("why does getHTTPResponse fail", None)
    assert "get http response" in u.expansions
    assert deterministic("plain words only", None).source == "none"


def test_a_host_rewrite_is_searched_beside_the_question_and_the_agents_facets_win():
    from mcp_retrieval.sampling import HostRewrite
    from mcp_retrieval.understand import with_host

    host = HostRewrite("apply_discount cart total", sub_queries=["host facet"], path_prefix="src/shop")
    mine = with_host(deterministic("how are prices reduced", ["my facet"]), "how are prices reduced", host)
    assert mine.sub_queries == ["my facet"] and mine.more_lexical_queries == ["apply_discount cart total", "my facet"]
    assert "apply discount" in mine.expansions and mine.path_prefix == "src/shop"
    theirs = with_host(deterministic("how are prices reduced", None), "how are prices reduced", host)
    assert theirs.sub_queries == ["host facet"] and theirs.source == "sampling"


def test_definitions_by_qualified_suffix_match_the_full_scan_they_replace(engine):
    """`Store.definitions_ending` (indexed) answers exactly what `qualname = x OR qualname LIKE
    '%.x'` over the whole table answered, in the same order, for every suffix of every qualified
    name in the fixture index, in either case (LIKE ignores ASCII case)."""
    store = engine.store
    qualnames = [q for (q,) in store.query("SELECT qualname FROM symbols")]
    asked = {".".join(q.split(".")[-n:]) for q in qualnames for n in (1, 2, 3) if len(q.split(".")) >= n}
    asked |= {a.upper() for a in asked} | {"no.such.thing"}
    assert len(asked) > 20 and store.definitions_ending("no.such.thing") == []
    for name in sorted(asked):
        scan = store.query("SELECT path, start_line FROM symbols WHERE qualname=? OR qualname LIKE ? LIMIT 5",
                           (name, "%." + name))
        assert store.definitions_ending(name) == [tuple(r) for r in scan], name


def test_message_fragments_are_the_literal_clauses_between_filled_in_values():
    a = extract("ValueError: Invalid value 'foo' for parameter bins: must be a positive integer, got -3\n"
                "error[E0308]: mismatched types in argument 2 of call\n"
                "thread 'main' panicked at 'index out of bounds: the len is 3', src/main.rs:4:5\n"
                "Error handling is hard, see above.", [])
    assert a.messages[:2] == ["mismatched types in argument", "must be a positive integer"]
    assert "for parameter bins" in a.messages and "index out of bounds" in a.messages
    assert not any("foo" in m or "-3" in m or "handling" in m for m in a.messages)  # values and prose stay out


def test_a_quoted_message_finds_its_raise_site_and_a_common_one_points_nowhere(engine):
    root = engine.config.root
    (root / "tests").mkdir(exist_ok=True)
    (root / "tests" / "test_quantity.py").write_text(
        "def test_zero():\n    assert 'quantity must be positive' in check(0)\n")
    for i in range(4):  # a phrase in four code files is no raise site
        (root / "src" / f"common_{i}.py").write_text(f"def f{i}(x):\n    raise KeyError('no such thing here')\n")
    engine.reindex()
    question = ("Adding zero items fails with\n\nValueError: quantity must be positive\n\n"
                "and removing one fails with KeyError: no such thing here")
    hits = engine.retriever.message_hits(extract(question, []))
    assert [engine.store.chunks_by_id([cid])[cid].path for cid, _ in hits] == ["src/shop/cart.py"]
    result = Workspace.single(engine).packet(question, debug=True)
    cart = next(i for i in result.items if i.path == "src/shop/cart.py")
    assert "message" in cart.tiers and "holds a message the question quotes, verbatim" in cart.why


def test_a_definition_the_question_names_leads_its_named_files_path_hits(engine):
    """In a file the question names, the path tier holds the definitions the question names (the
    symbol tier's chunks with weight >= NAMED_MIN) before the chunks with the most of its words."""
    from mcp_retrieval import retrieve

    wordy = "\n\n".join(f"def entry_{i}(ledger):\n    balance = ledger.balance + ledger.amount  # entry balance\n"
                        f"    return [balance, ledger.amount, ledger.entry]" for i in range(5))
    (engine.config.root / "src" / "shop" / "ledger.py").write_text(wordy + "\n\n\ndef close_books(rows):\n    return rows\n")
    engine.reindex()
    question = "In src/shop/ledger.py the ledger balance amount of an entry is wrong"
    anchors = extract(question, [])
    chunks = {c.symbol: c.id for c in engine.store.chunks_for_path("src/shop/ledger.py")}

    def symbols(named):
        hits, files = engine.retriever.path_hits(anchors, question, named)
        assert files == ["src/shop/ledger.py"] and len(hits) == retrieve.CHUNKS_PER_ANCHORED_FILE
        return [engine.store.chunks_by_id([cid])[cid].symbol for cid, _ in hits]

    assert "close_books" not in symbols({})  # none of the question's words
    assert symbols({chunks["close_books"]: retrieve.NAMED_MIN})[0] == "close_books"
    assert "close_books" not in symbols({chunks["close_books"]: retrieve.NAMED_MIN / 2})  # a weak name: no seat


@pytest.mark.slow
def test_extraction_reads_long_lines_without_spaces_in_linear_time():
    # Unbounded, the path patterns backtracked over the whole line from every `/` or `-`: these
    # 120,000-character lines took minutes. Bounded, the suite does not notice them, and a path in
    # such a line is still found.
    for line in ("/src/a" * 20000, "a/b." * 30000, "a-" * 60000, "x/blob/" * 17000, "at a" * 30000):
        extract(line)
    a = extract("a-" * 60000 + " see src/shop/cart.py#L12 and https://github.com/o/r/blob/main/src/x.rs#L3-L9")
    assert "src/shop/cart.py" in a.paths and a.links == [("src/x.rs", 3, 9)]
    # the quoted-code reader too (a line of backticks once backtracked from every length of its fence)
    from mcp_retrieval.question_parts import question_code
    for text in ("`" * 120000, "a" * 120000, "a." * 60000, "```\n" + "x(\n" * 40000, "````x\n```\n" * 12000):
        question_code(text)


def test_ipython_frames_give_path_line_and_function_deepest_first():
    question = ("pairplot raises KeyError\r\n```\r\n"
                "[c:\\Users\\me\\site-packages\\seaborn\\axisgrid.py](file:///C:/x/axisgrid.py) in pairplot(data, hue)\r\n"
                "   2143     if diag_kind == 'hist':\r\n-> 2144         grid.map_diag(histplot, **diag_kws)\r\n\r\n"
                "/home/me/site-packages/seaborn/axisgrid.py in map_diag(self, func, **kwargs)\r\n"
                "   1489 \r\n--> 1490             vector = self.data[var]\r\n```\r\n")
    frames = extract(question).frames
    assert frames == [("/home/me/site-packages/seaborn/axisgrid.py", 1490, "map_diag"),
                      ("c:\\Users\\me\\site-packages\\seaborn\\axisgrid.py", 2144, "pairplot")]


def test_the_lines_a_question_links_or_a_frame_points_at_lead_their_files_path_hits(engine):
    """A link to a file's lines (`/blob/<ref>/<path>#L12-L20`) and a frame inside a nested function
    (its function is no definition of the file) name the chunk holding those lines."""
    wordy = "\n\n".join(f"def entry_{i}(ledger):\n    balance = ledger.balance + ledger.amount  # entry balance\n"
                        f"    return [balance, ledger.amount, ledger.entry]" for i in range(5))
    tail = "\n\n\ndef close_books(rows):\n    def wrapper(row):\n        return row.total\n    return [wrapper(r) for r in rows]\n"
    (engine.config.root / "src" / "shop" / "ledger.py").write_text(wordy + tail)
    engine.reindex()
    close = next(c for c in engine.store.chunks_for_path("src/shop/ledger.py") if c.symbol == "close_books")
    link = (f"The ledger balance amount of an entry is wrong, see https://github.com/acme/shop/blob/0a1b2c3/"
            f"src/shop/ledger.py#L{close.start_line + 1}-L{close.start_line + 2}")
    frame = ('The ledger balance amount of an entry is wrong\nTraceback (most recent call last):\n'
             f'  File "/venv/site-packages/src/shop/ledger.py", line {close.start_line + 2}, in wrapper\n'
             "AttributeError: 'Row' object has no attribute 'total'")

    def first_symbol(question):
        anchors = extract(question, [])
        hits, files = engine.retriever.path_hits(anchors, question, {})
        assert files[0] == "src/shop/ledger.py"
        return engine.store.chunks_by_id([hits[0][0]])[hits[0][0]].symbol

    assert extract(link, []).links == [("src/shop/ledger.py", close.start_line + 1, close.start_line + 2)]
    assert extract(link, []).paths == ["src/shop/ledger.py"]  # not `github.com/acme/shop/blob/...`
    assert first_symbol(link) == "close_books" and first_symbol(frame) == "close_books"
    # without the lines pointed at, the chunks with the most of the question's words lead
    assert first_symbol("The ledger balance amount of an entry is wrong in src/shop/ledger.py") != "close_books"


def test_a_file_line_pointer_written_in_prose_leads_the_files_a_traceback_names(engine):
    """`pricing.py:NN` in prose is where the reporter says to look: a link to that line, whose file
    leads the path tier ahead of the traceback's deeper frames. In a fenced block `file:line` is
    a log's or a compiler's output, and a frame already read is not a second pointer."""
    chunks = {c.symbol: c for c in engine.store.chunks_for_path("src/shop/pricing.py")}
    pricing = chunks["with_tax"]
    trace = ('Traceback (most recent call last):\n  File "/venv/src/shop/pricing.py", line 9, in apply_discount\n'
             '  File "/venv/src/shop/cart.py", line 2, in total\nValueError: bad total\n')
    question = f"Cart totals are wrong\n{trace}My guess: `pricing.py:{pricing.start_line}` rounds too early."
    anchors = extract(question, [])
    assert anchors.links == [("pricing.py", pricing.start_line, pricing.start_line)]
    hits, files = engine.retriever.path_hits(anchors, question, {})
    assert files[:2] == ["src/shop/pricing.py", "src/shop/cart.py"]
    assert [cid for cid, _ in hits[:2]] == [chunks["apply_discount"].id, pricing.id]  # the frame's function, the line
    fenced = f"Cart totals are wrong\n```\nsrc/shop/pricing.py:{pricing.start_line}: warning: unused\n```\n"
    assert extract(fenced, []).links == [] and extract(trace, []).links == []
    assert extract("served on http://127.0.0.1:8008 and host.py:x", []).links == []
    assert extract("It breaks in src/cart.py:12.", []).links == [("src/cart.py", 12, 12)]  # a sentence's full stop


REPORT_PROSE = ("I print the monthly report of my orders as a table, customer by customer, with the total of "
                "each customer. The report table shows a total per customer that I compare with the printed totals.")


def _refund_and_report(engine, refund_source: str) -> None:
    """A refund module and a report module whose words a question's prose (REPORT_PROSE) shares."""
    root = engine.config.root
    (root / "src" / "shop" / "refund.py").write_text(refund_source)
    (root / "src" / "shop" / "report.py").write_text(
        "def monthly_report(orders):\n    \"\"\"Monthly report: totals per customer, printed as a table.\"\"\"\n"
        "    rows = [(o.customer, o.total) for o in orders]\n    print_table(rows, 'customer', 'total')\n"
        "    return rows\n")
    engine.reindex()


def _first_file_with(engine, tier: str, weight: float, question: str):
    """The file of the first chunk in `packet`'s ranked pool with `tier` at `weight`, and the tiers
    that found the refund module. The vector tiers are off: the hash embedder's vectors carry no
    meaning. The pool's chunk order, not the file ranker, is what these tiers feed."""
    from mcp_retrieval.stages import StageLog

    engine.config.tier_weights["dense_title"] = engine.config.tier_weights["dense"] = 0.0
    engine.config.tier_weights[tier] = weight
    ranked = engine.gather(question, [], [], None, StageLog(), for_packet=True).candidates
    return ranked[0].chunk.path, next(c.tiers for c in ranked if c.chunk.path == "src/shop/refund.py")


def test_a_pasted_issues_title_is_searched_as_its_own_tier(engine):
    from mcp_retrieval.question_parts import question_title

    _refund_and_report(engine, "def refund_amount(order, fraction):\n    \"\"\"The refund for a returned part of an order, "
                               "rounded.\"\"\"\n    return round(order.total * fraction, 2)\n")
    body = REPORT_PROSE
    question = f"Refund for a returned part is wrong\n\n{body}"
    assert question_title(question) == "Refund for a returned part is wrong" and question_title(body) is None
    assert question_title("Traceback (most recent call last):\n  File \"x.py\", line 1") is None
    assert question_title("### Describe the bug\nRefunds are wrong") is None

    assert _first_file_with(engine, "title", 0.0, question)[0] != "src/shop/refund.py"  # the body outvotes the subject
    path, tiers = _first_file_with(engine, "title", 0.6, question)
    assert path == "src/shop/refund.py" and "title" in tiers


def test_the_code_a_question_quotes_is_searched_as_its_own_tier(engine):
    from mcp_retrieval.question_parts import question_code

    _refund_and_report(engine, "def settle(order, part_fraction, rounding_digits=2):\n    \"\"\"Money back for a "
                               "returned part.\"\"\"\n    return round(order.total * part_fraction, rounding_digits)\n")
    root, body = engine.config.root, REPORT_PROSE
    code = ">>> money_back(part_fraction=0.5, rounding_digits=0)\n12.0"  # names no definition
    question = f"Strange numbers\n\n{body}\n\n```python\n{code}\n```\nSee also `part_fraction`."
    # the calls, not their output; prompts stripped; an inline span that is a name
    assert question_code(question) == "money_back(part_fraction=0.5, rounding_digits=0)\npart_fraction"
    assert question_code("A question in prose, with one `x` in it") is None  # too little code to search
    assert question_code("Run it:\n>>> import shop\n>>> shop.settle(order, 1)") == "import shop\nshop.settle(order, 1)"
    # a traceback's echo of each frame's line is the frame's code, not the reporter's
    trace = ('```\nTraceback (most recent call last):\n  File "/usr/lib/python3.11/re.py", line 251, in compile\n'
             '    return _compile(pattern, flags)\nre.error: missing )\n```\n')
    assert question_code(trace + "```python\nlint(config_path='setup.cfg')\n```") == "lint(config_path='setup.cfg')"
    # a shell session, its output and a configuration file are no source code
    assert question_code("```\n$ rg needle --count\nhaystack.txt:\n 12:    needle (5 boxes)\n```\n"
                         "```\n:80\nuri replace \"\\}\" %7D\nrespond \"{query}\"\n```") is None

    assert _first_file_with(engine, "code", 0.0, question)[0] != "src/shop/refund.py"  # the prose outvotes the call
    path, tiers = _first_file_with(engine, "code", 0.6, question)
    assert path == "src/shop/refund.py" and "code" in tiers
    # matched in Python code only: elsewhere it cost windows their first files (BENCHMARKS 17b)
    (root / "server" / "refund.go").write_text(
        "package server\n\nfunc MoneyBack(partFraction float64, roundingDigits int) float64 {\n"
        "\treturn partFraction * float64(roundingDigits)\n}\n")
    engine.reindex()
    items = Workspace.single(engine).packet(question, debug=True).items
    assert any(i.path == "server/refund.go" for i in items)
    assert all("code" not in i.tiers for i in items if not i.path.endswith(".py"))


def test_a_logged_message_in_quotes_or_after_a_location_is_read_as_a_message():
    a = extract('Builds print "WARNING: no number is assigned for table" now\n'
                "/doc/index.rst:5: WARNING: duplicate label intro, other instance in usage\n"
                "I get an error: nothing at all", [])
    assert "no number is assigned for table" in a.messages
    assert "duplicate label intro" in a.messages and "other instance in usage" in a.messages
    assert not any("DeprecationWarning" in m for m in extract("DeprecationWarning: the old api is gone", []).messages)


def test_a_message_printed_after_its_location_alone_is_read_as_a_message():
    a = extract("Warning, treated as error:\n"
                "../docs/trace.rst.inc:4:Malformed option description '[enable=]PATTERN', should look like \"opt\"\n"
                "shop/cart.py:1:0: W0611: Unused import os (unused-import)\n"
                "shop/cart.py:124: in __eq__\n", [])
    assert "Malformed option description" in a.messages and "Unused import os" in a.messages
    assert not any("__eq__" in m for m in a.messages)  # a test runner's failure frame names a function
    run = "\n".join(f"shop/m{i}.py:{i}:0: C0301: Line too long ({i}/80)" for i in range(6))
    assert extract(run, []).messages == []  # a linter's run over the project is the setting, not the complaint


def test_a_from_import_names_the_module_of_each_imported_name_not_the_package():
    a = extract("Totals are wrong\n```\n>>> from shop import Cart, price_of as p\n>>> Cart().total()\n```", [])
    assert {"shop.Cart", "shop.price_of"} <= set(a.dotted) and "shop" not in a.dotted
    b = extract("In shop.pricing the rounding is off:\n```\nfrom shop.pricing import round_price\n```", [])
    assert "shop.pricing" in b.dotted  # named in prose too: still an anchor of its own


def test_a_message_with_a_value_filled_in_at_its_end_finds_its_log_site(engine):
    (engine.config.root / "src" / "shop" / "numbering.py").write_text(
        "import logging\nlogger = logging.getLogger(__name__)\n\n\n"
        "def number_of(kind, label):\n    logger.warning('no number is assigned for %s: %s', kind, label)\n")
    engine.reindex()
    hits = engine.retriever.message_hits(extract('Since 3.3 we see "WARNING: no number is assigned for table:"', []))
    assert [engine.store.chunks_by_id([cid])[cid].path for cid, _ in hits] == ["src/shop/numbering.py"]


def test_a_command_line_option_the_question_names_finds_where_it_is_declared(engine):
    root = engine.config.root
    (root / "src" / "shop" / "cli.py").write_text(
        "def add_options(parser):\n    parser.add_argument('--dry-run', action='store_true')\n"
        "    parser.add_argument('--all', action='store_true')\n")
    (root / "src" / "shop" / "runner.py").write_text("def run(args):\n    return 'dry run' if args.dry_run else 'run'\n")
    engine.reindex()
    anchors = extract("Please add a short form for `--dry-run`; also --all is slow", [])
    assert anchors.options == ["--dry-run"]  # `--all` is in every tool
    hits = engine.retriever.message_hits(anchors)
    assert [engine.store.chunks_by_id([cid])[cid].path for cid, _ in hits] == ["src/shop/cli.py"]


def test_the_title_is_also_searched_with_adjacent_words_joined(engine):
    from mcp_retrieval.question_parts import with_joined_pairs

    assert with_joined_pairs("Generate man page sections") == "Generate man page sections generateman manpage pagesections"
    (engine.config.root / "src" / "shop" / "manpage.py").write_text("def render(doc):\n    return doc.upper()\n")
    engine.reindex()
    question = "Generate man page sections\nEach section should get its own directory."
    top = Workspace.single(engine).packet(question, debug=True).items[0]
    assert top.path == "src/shop/manpage.py" and "title" in top.tiers


ENV_DUMP = ("<details><summary>Output of <tt>shop.show_versions()</tt></summary>\n\n```\ncommit: None\n"
            "python: 3.8.3 (default, Jul  2 2020, 11:26:31)\npython-bits: 64\nOS: Linux\nLANG: en_US.UTF-8\n"
            "numpy: 1.18.5\npandas: 1.0.5\nh5py: 2.10.0\nnetCDF4: None\nzarr: None\ndask: 2.20.0\n"
            "setuptools: 49.2.0\n```\n</details>\n")


def _place(items, path: str) -> int:
    """The first place of `path` among packet items, past the end when it is not there."""
    return next((n for n, i in enumerate(items) if i.path == path), len(items) + 1)


def test_an_environment_dump_is_set_aside_before_any_stage_reads_the_question(engine, monkeypatch):
    from mcp_retrieval.question_parts import without_environment

    root = engine.config.root
    (root / "src" / "shop" / "versions.py").write_text(
        "def show_versions():\n    \"\"\"Print the versions of numpy, pandas, h5py, netCDF4, zarr, dask, setuptools.\"\"\"\n"
        "    for name in ('numpy', 'pandas', 'h5py', 'netCDF4', 'zarr', 'dask', 'setuptools'):\n"
        "        print(name, version_of(name))\n    print('python', 'python-bits', 'commit', 'OS', 'LANG')\n")
    (root / "src" / "shop" / "discount.py").write_text(
        "def seasonal_discount(order, season):\n    \"\"\"The discount of an order in a season.\"\"\"\n"
        "    return order.total * RATES[season]\n")
    engine.reindex()
    question = f"seasonal_discount is wrong in winter\n\nThe winter discount of an order is too high.\n\n{ENV_DUMP}"
    kept, set_aside = without_environment(question)
    assert set_aside == 13 and "show_versions" not in kept and "numpy" not in kept and "winter discount" in kept
    assert without_environment("x = 1\n\nprint(x)  # 1.2.3\n") == ("x = 1\n\nprint(x)  # 1.2.3\n", 0)
    # a table of values (a name and a number a line) is no environment dump
    assert without_environment("a    1.0\nb    2.0\nc    3.0\nd    4.0\n")[1] == 0
    # a template's Environment section of a few facts goes, heading included; one holding prose stays
    section = "Bug in routing\n\n## Environment\n\n- go version: 1.16.3\n- operating system: macosx\n\n## Next\nmore"
    assert without_environment(section) == ("Bug in routing\n\n\n\n## Next\nmore", 3)
    prose = "## Environment\nIt fails when the router runs inside a container, see below.\n"
    assert without_environment(prose) == (prose, 0)

    monkeypatch.setattr(engine.config, "rules", Rules(environment_set_aside=False))
    before = _place(Workspace.single(engine).packet(question, max_items=50).items, "src/shop/versions.py")
    monkeypatch.setattr(engine.config, "rules", Rules(environment_set_aside=True))
    items = Workspace.single(engine).packet(question, max_items=50).items
    assert items[0].path == "src/shop/discount.py" and _place(items, "src/shop/versions.py") > before


def test_an_issue_templates_comments_are_set_aside(engine, monkeypatch):
    """A template's HTML comments (hidden on GitHub) name the template's own files, not the subject."""
    from mcp_retrieval.question_parts import without_template_comments

    root = engine.config.root
    (root / "diagnostics").mkdir()
    (root / "diagnostics" / "info.sh").write_text(
        "#!/bin/sh\n# Prints what a bug report needs: versions, environment, configuration.\n"
        "echo \"version: $(shop --version)\"\nenv | grep SHOP_\ncat ~/.config/shop/config\n")
    (root / "src" / "shop" / "discount.py").write_text(
        "def seasonal_discount(order, season):\n    \"\"\"The discount of an order in a season.\"\"\"\n"
        "    return order.total * RATES[season]\n")
    engine.reindex()
    template = ("<!--\nThanks for the report! Please run diagnostics/info.sh and paste the bug report "
                "output: the version, environment and configuration it prints.\n-->\n")
    question = f"seasonal_discount is wrong in winter\n{template}The winter discount of an order is too high.\n"
    kept, found = without_template_comments(question)
    assert found == 1 and "info.sh" not in kept and kept.count("\n") == question.count("\n")
    # a comment the reporter never closed holds the rest of the report: it stays
    assert without_template_comments("Crash\n<!-- the stack:\nKeyError") == ("Crash\n<!-- the stack:\nKeyError", 0)

    monkeypatch.setattr(engine.config, "rules", Rules(template_comments_set_aside=False))
    before = _place(Workspace.single(engine).packet(question, max_items=50).items, "diagnostics/info.sh")
    monkeypatch.setattr(engine.config, "rules", Rules(template_comments_set_aside=True))
    items = Workspace.single(engine).packet(question, max_items=50).items
    paths = [i.path for i in items]
    assert paths[0] == "src/shop/discount.py" and _place(items, "diagnostics/info.sh") > before
