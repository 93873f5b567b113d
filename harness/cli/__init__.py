"""The command line: the entry (``main``: dispatch, messages, exit codes), one module per command in
``commands/`` (its name, help, arguments and handler as a ``Command``), listed once in ``registry``, the
parser built from that list (``parser``) with its shared option groups (``option_groups``) and checked
values (``checked_types``), what a parsed command line asks of the library (``requests``), and what every
command prints (``output``, ``console``). Nothing below this package prints or picks an exit code."""
