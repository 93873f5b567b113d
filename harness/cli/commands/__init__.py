"""One module per command of the command line, each declaring its name, help, arguments and handler as a
``Command``; ``harness.cli.registry`` lists them in the order the help shows them."""
