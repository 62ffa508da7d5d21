"""``docqa``: the command line. It parses, calls the application, and maps errors.

The CLI is the administrator's tool on the server: ``--as USER`` acts for that
user, with that user's principals from the directory. Commands that don't
embed never import the embedding model.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence

from acl.errors import DocQAError
from service.api.cli.parser import build_parser
from service.api.cli.remote import server_url
from service.api.errors import mapping_for, public_message

log = logging.getLogger("docqa.cli")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit code (never raises, never a traceback)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
        stream=sys.stderr,
    )
    logging.captureWarnings(True)  # library warnings are log lines like any other
    if args.data_dir:
        os.environ["DOCQA_DATA_DIR"] = args.data_dir
    app = None
    try:
        remote = getattr(args, "remote_handler", None)
        url = server_url(args) if remote is not None else None
        if remote is not None and url is not None:  # ask a running server: no data directory, no model here
            code = int(remote(args, url))
        else:
            from service.bootstrap import build_app
            from service.config import load_settings

            app = build_app(load_settings(args.config))
            code = int(args.handler(args, app))
        sys.stdout.flush()  # a closed pipe is met here, inside the handlers below, not at exit
        return code
    except DocQAError as exc:
        print(f"error: {public_message(exc)}", file=sys.stderr)
        return mapping_for(exc).exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`docqa stores | head -1`): stop quietly, as Unix tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except Exception as exc:  # an internal error: say so plainly, details only on request
        if args.debug:
            raise
        log.debug("internal error", exc_info=True)
        print(f"internal error ({type(exc).__name__}); re-run with --debug for details", file=sys.stderr)
        return mapping_for(exc).exit_code
    finally:
        if app is not None:
            app.close()


def entry() -> None:  # pragma: no cover
    sys.exit(main())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
