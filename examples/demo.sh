#!/usr/bin/env bash
# The main job on the embedded default: index the Acme sample corpus, then ask the
# same question as two users with different rights, so the access control is visible.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
docqa=${DOCQA_BIN:-$here/../.venv/bin/docqa}
[ -x "$docqa" ] || docqa=docqa
export DOCQA_DATA_DIR=${DOCQA_DATA_DIR:-$(cd "$here/.." && pwd)/.docqa}
question="What was the revenue in the third quarter?"

echo "== docqa index examples/acme --store acme   (data in $DOCQA_DATA_DIR)"
"$docqa" index "$here/acme" --store acme

echo
echo "== alice is in group:finance and may read finance/"
"$docqa" ask "$question" --store acme --as alice
echo
echo "== bob is in group:engineering and may not read finance/"
"$docqa" ask "$question" --store acme --as bob
echo
echo "== bob may read the handbook, like everyone"
"$docqa" ask "How many vacation days can I carry over?" --store acme --as bob
