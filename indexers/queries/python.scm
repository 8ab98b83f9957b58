; calls: f(), obj.f(), self.f()
(call function: (identifier) @call)
(call function: (attribute object: (_) @call.object attribute: (identifier) @call.attr))
; imports
(import_statement name: (dotted_name) @import)
(import_statement name: (aliased_import name: (dotted_name) @import alias: (identifier) @import.alias))
(import_from_statement module_name: (_) @from.module name: (dotted_name) @from.name)
(import_from_statement module_name: (_) @from.module name: (aliased_import name: (dotted_name) @from.name alias: (identifier) @from.alias))
; inheritance
(class_definition superclasses: (argument_list [(identifier) (attribute)] @inherit))
; type references in annotations
(type (identifier) @ref)
(type (attribute attribute: (identifier) @ref))
