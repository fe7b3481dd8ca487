"""`python -m aclcheck` runs the CLI."""

from aclcheck.cli import main

if __name__ == "__main__":
    main()
