#!/usr/bin/env bash
# The README's pictures, drawn by the installed command line (run from the repository root after ./dev.sh setup):
#   docs/pictures/render.sh            writes docs/pictures/*.png
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
TIRX_LAYOUT=${TIRX_LAYOUT:-../../.venv/bin/tirx-layout}
# A register fragment: the guide's warp layout with a replica and an offset (cells T<thread>V<value>).
"$TIRX_LAYOUT" render --preset warp-fragment -o fragment.png
# A 128B-swizzled fp16 tile with its banks (cells R<row>B<bank>) and the bank view of a column read.
"$TIRX_LAYOUT" render --preset swizzled-fp16-128B --access column -o swizzled-banks.png
# A TMEM tile with replicas: the scale-factor atom, the same 32 rows in all four 32-lane windows (cells L<lane>C<col>).
"$TIRX_LAYOUT" render --preset scale-factor-atom -o tmem-replicas.png
