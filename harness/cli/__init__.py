"""The command line: the entry (``main``: dispatch, messages, exit codes), the parser (``parser``) with its
shared option groups (``option_groups``) and checked values (``checked_types``), what a parsed command
line asks of the library (``requests``), what every command prints (``output``, ``console``), and the
commands that read results (``results``), drive images and clusters (``docker``) and keep history
(``history``). Nothing below this package prints or picks an exit code."""
