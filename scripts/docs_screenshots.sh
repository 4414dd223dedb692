#!/usr/bin/env bash
# Headless screenshots of the built site (docs/_build/html), to look at what a browser
# shows: the home page, a gallery page, an API page and a tutorial page.
#   bash scripts/docs_screenshots.sh [HTML_DIR] [OUT_DIR]
# (apt-get install -y chromium; defaults: docs/_build/html and results/docs).
# MathJax comes from its CDN: without network the formulas stay TeX source, unless the
# site was built with TOPOPT_MATHJAX pointing at a local copy (docs/conf.py). The virtual
# time budget gives the scripts (theme, MathJax when reachable) time to run.
set -euo pipefail
cd "$(dirname "$0")/.."
HTML="$(realpath "${1:-docs/_build/html}")"
OUT="${2:-results/docs}"
mkdir -p "$OUT"
BROWSER="$(command -v chromium || command -v chromium-browser || command -v google-chrome)"
shot() {   # page, picture
    "$BROWSER" --headless --no-sandbox --disable-gpu --hide-scrollbars \
        --virtual-time-budget=8000 --window-size=1400,1000 \
        --screenshot="$OUT/$2" "file://$HTML/$1" 2>/dev/null
    echo "$OUT/$2 <- $1"
}
shot index.html home.png
shot gallery/mbb_beam.html gallery-mbb_beam.png
shot gallery/index.html gallery-index.png
shot api/topopt.design.html api-design.png
shot api/generated/topopt.optimize.minimize.html api-minimize.png
tutorial="$(cd "$HTML" && ls tutorials/*.html | grep -v '/index.html$' | head -1)"
shot "${tutorial:-tutorials/index.html}" tutorial.png
