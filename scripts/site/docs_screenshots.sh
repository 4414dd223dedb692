#!/usr/bin/env bash
# Headless screenshots of the built site (docs/_build/html), to look at what a browser
# shows: the home page, a gallery page, an API page and a tutorial page.
#   bash scripts/site/docs_screenshots.sh [HTML_DIR] [OUT_DIR]
# (apt-get install -y chromium; defaults: docs/_build/html and results/docs).
# The site carries its own MathJax (docs/conf.py: _static/mathjax/), so the browser runs
# with no network: in a network namespace of its own (unshare -n, as root) where there is
# one, and pointed at a proxy that does not exist either way. The virtual time budget gives
# the scripts (theme, MathJax) time to run. reliability.png is the reliability tutorial,
# the page with the most formulas.
set -euo pipefail
cd "$(dirname "$0")/../.."
HTML="$(realpath "${1:-docs/_build/html}")"
OUT="${2:-results/docs}"
mkdir -p "$OUT"
BROWSER="$(command -v chromium || command -v chromium-browser || command -v google-chrome)"
OFFLINE=()
if [ "$(id -u)" = 0 ] && unshare -n true 2>/dev/null; then
    OFFLINE=(unshare -n)
fi
shot() {   # page, picture[, window height]
    "${OFFLINE[@]}" "$BROWSER" --headless --no-sandbox --disable-gpu --hide-scrollbars \
        --disable-background-networking --proxy-server=127.0.0.1:9 --proxy-bypass-list='<-loopback>' \
        --virtual-time-budget=8000 --window-size=1400,"${3:-1000}" \
        --screenshot="$OUT/$2" "file://$HTML/$1" 2>/dev/null
    echo "$OUT/$2 <- $1${OFFLINE:+ (no network: ${OFFLINE[*]})}"
}
shot index.html home.png
shot gallery/mbb_beam.html gallery-mbb_beam.png
shot gallery/index.html gallery-index.png
shot api/topopt.design.html api-design.png
shot api/generated/topopt.optimize.minimize.html api-minimize.png
tutorial="$(cd "$HTML" && ls tutorials/*.html | grep -v '/index.html$' | head -1)"
shot "${tutorial:-tutorials/index.html}" tutorial.png
shot tutorials/reliability.html reliability.png 1600
