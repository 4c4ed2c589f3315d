"""The splitdesk command line: the window (default) and its subcommands, one module each;
shared arguments in :mod:`splitdesk.cli.args`.
"""
