; calls: a command that names a function (`greet world`); builtins find no definition
((command name: (command_name (word) @call))
 (#not-match? @call "^(source|\\.)$"))
; imports: `source lib.sh`, `. ./lib.sh`
((command name: (command_name (word) @_source) argument: [(word) (raw_string)] @import)
 (#match? @_source "^(source|\\.)$"))
((command name: (command_name (word) @_source) argument: (string (string_content) @import))
 (#match? @_source "^(source|\\.)$"))
