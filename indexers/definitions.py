"""Which tree-sitter nodes are definitions, in every parsed language: their kind, name and body.

The chunker cuts a file at these definitions and the symbol table names them, so both read them
from here. Most languages mark a definition by its node type (`function_definition`); a few need
a look at the node: an Elixir definition is a call of `def`/`defmodule`/..., a Zig type is a
`const` bound to a `struct`, a Lua function may be assigned to a table field. Lines that belong
to the definition that follows them (Elixir's `@doc`/`@spec`, a Haskell type signature) are part
of its span, as decorators are.
"""

from __future__ import annotations

from dataclasses import dataclass

# node type -> chunk kind, per language
_DEFS: dict[str, dict[str, str]] = {
    "python": {"function_definition": "function", "class_definition": "class"},
    "javascript": {"function_declaration": "function", "generator_function_declaration": "function",
                   "class_declaration": "class", "method_definition": "method"},
    "go": {"function_declaration": "function", "method_declaration": "method", "type_declaration": "class",
           "type_spec": "class", "type_alias": "class"},  # the last two: each type of a `type ( ... )` group
    "rust": {"function_item": "function", "impl_item": "class", "struct_item": "class", "enum_item": "class",
             "trait_item": "class", "mod_item": "class", "macro_definition": "function"},
    "java": {"class_declaration": "class", "interface_declaration": "class", "enum_declaration": "class",
             "record_declaration": "class", "annotation_type_declaration": "class",  # `@interface Expose`
             "method_declaration": "method", "constructor_declaration": "method"},
    "c": {"function_definition": "function", "struct_specifier": "class", "enum_specifier": "class",
          "type_definition": "class", "preproc_function_def": "function"},
    "cpp": {"function_definition": "function", "class_specifier": "class", "struct_specifier": "class",
            "namespace_definition": "class", "enum_specifier": "class", "type_definition": "class",
            "preproc_function_def": "function"},
    "ruby": {"method": "method", "singleton_method": "method", "class": "class", "module": "class"},
    "php": {"function_definition": "function", "method_declaration": "method", "class_declaration": "class",
            "interface_declaration": "class", "trait_declaration": "class", "enum_declaration": "class"},
    "csharp": {"class_declaration": "class", "interface_declaration": "class", "struct_declaration": "class",
               "enum_declaration": "class", "record_declaration": "class",
               "method_declaration": "method", "constructor_declaration": "method"},
    # Swift: `class_declaration` is also struct, enum, actor and extension
    "swift": {"class_declaration": "class", "protocol_declaration": "class", "function_declaration": "function",
              "init_declaration": "method"},
    "kotlin": {"class_declaration": "class", "object_declaration": "class", "companion_object": "class",
               "function_declaration": "function"},
    "scala": {"class_definition": "class", "object_definition": "class", "trait_definition": "class",
              "enum_definition": "class", "function_definition": "function", "package_object": "class"},
    "shell": {"function_definition": "function"},
    "lua": {"function_declaration": "function"},
    # a function's equations are one definition each; neighbours of one name merge into a chunk
    "haskell": {"function": "function", "bind": "function", "data_type": "class", "newtype": "class",
                "type_synonym": "class", "class": "class", "instance": "class", "type_family": "class",
                "data_family": "class"},
    "zig": {"function_declaration": "function", "test_declaration": "function"},
    "elixir": {},  # calls of the definition macros below
}
_DEFS["typescript"] = _DEFS["tsx"] = {**_DEFS["javascript"], "interface_declaration": "class",
                                       "abstract_class_declaration": "class", "enum_declaration": "class",
                                       "type_alias_declaration": "class", "function_signature": "function",
                                       "internal_module": "class", "module": "class"}  # namespace X, declare module "x"

# Elixir: the macros that define, by the kind of what they define
_ELIXIR_DEFINERS = {
    **dict.fromkeys(("defmodule", "defprotocol", "defimpl", "defexception"), "class"),
    **dict.fromkeys(("def", "defp", "defmacro", "defmacrop", "defguard", "defguardp", "defdelegate", "defn",
                     "defnp", "defcallback"), "function"),
}
_ELIXIR_ATTACHED = ("@doc", "@spec", "@impl", "@deprecated", "@since", "@decorate")
_ZIG_CONTAINERS = ("struct_declaration", "enum_declaration", "union_declaration", "opaque_declaration")

_DECLARATIONS = ("lexical_declaration", "variable_declaration")
_FUNCTIONS = ("arrow_function", "function_expression", "function")
# JS/TS nodes that bind a name to a value, and the field holding the value: a definition when the
# value is a function (`_function_value`)
_VALUE_FIELD = {"variable_declarator": "value", "assignment_expression": "right", "public_field_definition": "value",
                "field_definition": "value"}
_WRAPPERS = {"decorated_definition", "export_statement", "template_declaration", "ambient_declaration",
             "expression_statement"}
# Containers whose definitions are read as if at their level: a C# `namespace X { ... }` (or PHP's
# braced form) names every type of a file the same, so it is no chunk and no part of a qualname
# (as a Java package or a C# file-scoped namespace is not); a C++ namespace stays a container.
# Haskell's top-level `declarations` is a list of definitions, nothing more, as are C's conditional
# blocks (`#ifdef X ... #else ... #endif`, around much of a C library) and C++'s `extern "C" { }`.
# So is an ERROR node: what the grammar could not fit (a brace opened under one `#ifdef` and closed
# under another) wraps whole blocks whose definitions it still recovered (BENCHMARKS 62c).
# Ruby's `class << self` holds the class's own methods: they are the class's members; so are the
# methods of a Java enum after its constants and those of a Scala 3 `extension`.
_TRANSPARENT = {"namespace_declaration", "namespace_definition", "linkage_specification", "singleton_class"}
_TRANSPARENT_LISTS = {"declarations", "preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif", "ERROR",
                      "preproc_elifdef", "enum_body_declarations", "extension_definition"}
_BODY_FIELDS = ("body", "declaration_list", "declarations")
_BODY_TYPES = ("class_body", "declaration_list", "field_declaration_list", "block", "interface_body", "enum_body",
               "statement_block", "do_block", "body_statement", *_ZIG_CONTAINERS)


@dataclass(frozen=True)
class Definition:
    definition: object  # the tree-sitter node of the definition itself
    outer: object  # the node including decorators / export wrappers
    name: str
    kind: str  # function | method | class
    qualname: str
    start: int  # 0-based first line, with the decorators and attached lines before it
    end: int  # 0-based last line


def kinds(language: str) -> dict[str, str]:
    return _DEFS.get(language, {})


# Declarations that only name a definition kept elsewhere when they have no body: Rust's `mod
# parser;` (the module is `parser.rs`), C/C++'s forward `struct event_base;`, `class Foo;`, `enum E;`
# (the type is defined in another header or source file). Read as definitions, a crate root or a
# header of forward declarations "defined" every name it lists (docs/BENCHMARKS.md 69c-69d).
_BODILESS_DECLARATIONS = frozenset({"mod_item", "struct_specifier", "class_specifier", "enum_specifier"})


def _kind(node, defs: dict[str, str]) -> str | None:
    if node.type in _BODILESS_DECLARATIONS and node.child_by_field_name("body") is None:
        return None
    if node.type in defs:
        return defs[node.type]
    if node.type == "call":  # Elixir: `def name(args) do ... end`
        target = node.child_by_field_name("target")
        if target is not None and target.type == "identifier":
            return _ELIXIR_DEFINERS.get(_text(target))
    return None


def _lone_signature(node, defs) -> bool:
    """A Haskell type signature no equation of its name follows: a class method's declaration
    (`class ToJSON a where toJSON :: a -> Value`) or a foreign import's, a definition of its own."""
    if node.type != "signature" or "bind" not in defs:
        return False
    following = node.next_named_sibling
    found = _unwrap(following, defs) if following is not None else None
    return found is None or found[0].type == "signature" or def_name(found[0]) != def_name(node)


def _unwrap(node, defs):
    """(definition node, outer node incl. decorators/export, kind) or None."""
    if _lone_signature(node, defs):
        return node, node, "function"
    kind = _kind(node, defs)
    if kind is not None:
        return node, node, kind
    if node.type in _WRAPPERS:
        for child in node.named_children:
            if (kind := _kind(child, defs)) is not None:
                return child, node, kind
            # `export const Modal = () => {...}`: how most JS/TS modules define their functions and
            # components (a fifth of the JS/TS files over 3 kB were line windows, BENCHMARKS 62c)
            if child.type in _WRAPPERS or child.type in _DECLARATIONS or child.type == "assignment_expression":
                inner = _unwrap(child, defs)
                if inner:
                    return inner[0], node, inner[2]
    if node.type == "export_statement" and (function := _function_value(node.child_by_field_name("value"))):
        return function, node, "function"  # `export default (req, res) => {...}`: a handler, a plugin, a page
    if node.type in _DECLARATIONS:  # const f = () => {...}
        for decl in node.named_children:
            value = decl.child_by_field_name("value") if decl.type == "variable_declarator" else None
            if _function_value(value) is not None:
                return decl, node, "function"
            if decl.type in _ZIG_CONTAINERS:  # Zig: `pub const List = struct { ... };`
                return node, node, "class"
    if node.type == "assignment_expression" and _function_value(node.child_by_field_name("right")) is not None:
        return node, node, "function"  # CommonJS: `res.status = function status(code) {...}` (express, koa)
    if node.type in ("public_field_definition", "field_definition") and \
            _function_value(node.child_by_field_name("value")) is not None:
        return node, node, "function"  # a class field holding a function: `handleClick = () => {...}`
    if node.type == "assignment_statement" or (node.type == "variable_declaration" and node.named_children
                                               and node.named_children[0].type == "assignment_statement"):
        assign = node if node.type == "assignment_statement" else node.named_children[0]  # Lua: M.f = function
        values = [c for c in assign.named_children if c.type == "expression_list"]
        if values and values[0].named_children and values[0].named_children[0].type == "function_definition":
            return assign, node, "function"
    return None


def _function_value(value):
    """The function a JS/TS value is, or wraps (`_wrapped_function`), or is guarded by (axios's
    `export default isHttpAdapterSupported && function httpAdapter(config) {...}`); None for
    anything else."""
    if value is None:
        return None
    if value.type == "binary_expression" and _text(value.child_by_field_name("operator")) in ("&&", "||"):
        return _function_value(value.child_by_field_name("right"))
    return value if value.type in _FUNCTIONS else _wrapped_function(value)


def _wrapped_function(value):
    """The function a call wraps, as JS/TS modules define many: `memo((props) => ...)`,
    `forwardRef(function (props, ref) {...})`, zustand's `create((set) => ({...}))`."""
    if value.type != "call_expression":
        return None
    arguments = value.child_by_field_name("arguments")
    for argument in arguments.named_children if arguments is not None else ():
        if argument.type in _FUNCTIONS:
            return argument
        if argument.type == "call_expression" and (inner := _wrapped_function(argument)) is not None:
            return inner  # `memo(forwardRef((props, ref) => ...))`
    return None


def _kotlin_receiver(node, name) -> str | None:
    """The receiver type of a Kotlin extension function (`String` of `fun String.toSlug()`,
    `List` of `fun <T> List<T>.second()`): the type just before the `.` before its name."""
    previous = name.prev_sibling
    if previous is None or previous.type != ".":
        return None
    receiver = previous.prev_named_sibling
    if receiver is None or receiver.type not in ("user_type", "nullable_type"):
        return None
    if receiver.type == "nullable_type":  # `String?`
        receiver = next((c for c in receiver.named_children if c.type == "user_type"), None)
        if receiver is None:
            return None
    names = [c for c in receiver.named_children if c.type != "type_arguments"]  # `kotlin.collections.List<T>`
    return _text(names[-1]) if names else None


def _grouped_types(node) -> bool:
    """A Go `type ( A ...; B ...; C ... )` group: each of its types is a definition of its own."""
    return node.type == "type_declaration" and \
        sum(c.type in ("type_spec", "type_alias") for c in node.named_children) > 1


def def_name(node) -> str | None:
    """The declared name of a definition node, across grammars."""
    if node.type == "impl_item":  # `impl<T> Trait for Type<T>` is named after the type, without its parameters
        named = node.child_by_field_name("type")
        if named is not None and named.type == "generic_type":
            named = named.child_by_field_name("type") or named
        return _text(named)
    if node.type == "init_declaration":  # Swift initialisers have no name of their own
        return "init"
    if node.type == "companion_object" and node.child_by_field_name("name") is None:  # Kotlin
        return "Companion"
    if node.type == "type_declaration":
        for spec in node.named_children:
            name = spec.child_by_field_name("name")
            if name is not None:
                return _text(name)
        return None
    if node.type == "call":
        return _elixir_name(node)
    if node.type == "instance":  # Haskell: `instance ToJSON (Maybe a)` is named with its type
        patterns = node.child_by_field_name("patterns")
        return " ".join(filter(None, (_text(node.child_by_field_name("name")), _text(patterns))))
    if node.type == "test_declaration":  # Zig: `test "name" { ... }`
        label = next((c for c in node.named_children if c.type in ("string", "identifier")), None)
        return f"test {_text(label)}".strip()
    if node.type == "variable_declaration":  # Zig: `const Name = struct { ... }`
        return next((_text(c) for c in node.named_children if c.type == "identifier"), None)
    if node.type in _FUNCTIONS and node.child_by_field_name("name") is None:  # JS: `export default () => {...}`
        return "default"  # the name JS gives it (an importer names it anew)
    if node.type == "assignment_expression":  # JS: `Router.prototype.route = function ...` is `Router.route`
        return _text(node.child_by_field_name("left")).replace(".prototype.", ".")
    if node.type == "assignment_statement":  # Lua: `M.name = function ... end`
        names = next((c for c in node.named_children if c.type == "variable_list"), None)
        return _text(names).replace(":", ".") if names is not None else None
    name = node.child_by_field_name("property" if node.type == "field_definition" else "name")  # JS class field
    if name is not None and node.type == "function_declaration" and (receiver := _kotlin_receiver(node, name)):
        return f"{receiver}.{_text(name)}"  # Kotlin `fun String.toSlug()`: named as it is called, `String.toSlug`
    if name is not None:
        if name.type == "string":  # TypeScript `declare module "express"`
            return _text(name).strip("\"'")
        return _text(name).replace(":", ".") if name.type == "method_index_expression" else _text(name)
    declarator = node.child_by_field_name("declarator")  # C/C++ functions: walk the declarator chain
    while declarator is not None:
        if declarator.type in ("identifier", "field_identifier", "qualified_identifier", "destructor_name",
                               "operator_name", "type_identifier"):
            return _text(declarator)
        declarator = declarator.child_by_field_name("declarator")
    return None


def _elixir_name(node) -> str | None:
    """`def name(args)`, `def name(args) when guard`, `defmodule A.B`, `defimpl P, for: T`."""
    arguments = next((c for c in node.named_children if c.type == "arguments"), None)
    if arguments is None or not arguments.named_children:
        return None
    head = arguments.named_children[0]
    if head.type == "binary_operator":  # a guard: `name(args) when ...`
        head = head.child_by_field_name("left") or head
    if head.type == "call":
        head = head.child_by_field_name("target") or head
    name = _text(head)
    for pair in (p for kw in arguments.named_children if kw.type == "keywords" for p in kw.named_children):
        if _text(pair.child_by_field_name("key")).strip().rstrip(":") == "for":  # defimpl P, for: T
            name = f"{name}.{_text(pair.child_by_field_name('value'))}"
    return name


def _text(node) -> str:
    return node.text.decode("utf-8", "replace") if node is not None and node.text is not None else ""


def body(node):
    """The node holding a definition's members or statements, or None."""
    if node.type in _VALUE_FIELD:  # `const f = () => {...}`: the function's statements
        function = _function_value(node.child_by_field_name(_VALUE_FIELD[node.type]))
        return body(function) if function is not None else None
    for name in _BODY_FIELDS:
        found = node.child_by_field_name(name)
        if found is not None:
            return found
    for child in node.named_children:
        if child.type in _BODY_TYPES:
            return child
    return None


def _attached(node) -> bool:
    """A line that belongs to the definition after it: Elixir's `@doc`/`@spec`, a Haskell signature."""
    if node.type == "signature":
        return True
    return node.type == "unary_operator" and _text(node).startswith(_ELIXIR_ATTACHED)


def definitions(node, defs: dict[str, str], qual: str | None):
    """The definitions directly under `node` (children that are not definitions are yielded as None)."""
    attached: list = []  # lines waiting for the definition they introduce
    for child in node.named_children:
        if child.type in _TRANSPARENT_LISTS or _grouped_types(child):
            yield from definitions(child, defs, qual)
            continue
        if child.type in _TRANSPARENT and child.type not in defs and (inner := body(child)) is not None:
            yield from definitions(inner, defs, qual)
            continue
        found = _unwrap(child, defs)
        if found is None:
            attached = [*attached, child] if _attached(child) else []
            yield child, None
            continue
        definition, outer, kind = found
        name = def_name(definition) or "<anonymous>"
        if kind == "function" and qual is not None:
            kind = "method"
        start = attached[0].start_point[0] if attached else outer.start_point[0]
        attached = []
        end_row, end_column = outer.end_point
        end = end_row - 1 if end_column == 0 and end_row > outer.start_point[0] else end_row  # a `#define`'s newline
        yield child, Definition(definition, outer, name, kind, f"{qual}.{name}" if qual else name, start, end)


def has_definitions(node, defs) -> bool:
    """Whether `node` holds a definition, reading transparent containers as `definitions` does."""
    return any(found is not None for _, found in definitions(node, defs, None))


def first_definition_line(node, defs) -> int | None:
    for _, found in definitions(node, defs, None):
        if found is not None:
            return found.start
    return None
