from harness.cli import main

raise SystemExit(main(prog="python -m harness"))
