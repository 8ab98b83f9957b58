; calls: f(x), Mod.f(x); the definition macros and module directives are no calls
((call target: (identifier) @call)
 (#not-match? @call "^(def|defp|defmodule|doc|moduledoc|typedoc|spec|type|typep|opaque|callback|impl|behaviour|defmacro|defmacrop|defprotocol|defimpl|defstruct|defexception|defdelegate|defguard|defguardp|alias|import|use|require|quote|unquote|if|unless|case|cond|with|for|fn|raise|describe|test)$"))
(call target: (dot left: (_) @call.object right: (identifier) @call.attr))
; imports and mixins: alias A.B, import A, require A, use A
((call target: (identifier) @_directive (arguments (alias) @import))
 (#match? @_directive "^(alias|import|require)$"))
((call target: (identifier) @_use (arguments (alias) @inherit))
 (#eq? @_use "use"))
(alias) @ref
