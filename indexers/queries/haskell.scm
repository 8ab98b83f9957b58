; imports: import qualified Data.Map as M
(import module: (module) @import alias: (module) @import.alias)
(import module: (module) @import !alias)
; an instance implements its class
(instance name: (name) @inherit)
; calls: a function applied to arguments (`helper t`), qualified (`M.lookup k m`)
(apply function: (variable) @call)
(apply function: (qualified module: (module) @call.object id: (variable) @call.attr))
; types named in signatures and declarations
(name) @ref
