"""The command line: parses, calls the library, prints, exits. The only package that imports typer or prints."""
