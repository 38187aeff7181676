"""ptxmoe command line."""
import sys


def main(argv=None) -> int:
    print("ptxmoe: under construction")
    return 0


if __name__ == "__main__":
    sys.exit(main())
