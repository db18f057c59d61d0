#!/usr/bin/env bash
# Opens a porttool report page in headless Chromium, the way a person would open it from disk
# (file://), and checks it: writes a screenshot, then prints
#   boxes N            <g class="node"> elements in the live DOM after the page's scripts ran
#   console errors N   messages the page sent to the console (a healthy page sends none)
# and the messages themselves. One Chromium run does both: --dump-dom gives the DOM, and
# --enable-logging=stderr prints every console message as an "INFO:CONSOLE" line, including
# uncaught exceptions and requests the page's Content-Security-Policy blocked. The page's own
# diagnostics (lib/emit/report_html.h: <html data-pt-errors data-pt-ready>) are read as well, so
# a script that stopped half-way counts as an error even if it logged nothing.
#   scripts/render_html.sh PAGE.html OUT.png [DOM.html]
# DOM.html, when given, receives the live DOM after the page's scripts ran (what a test reads
# the visible text from).
# Exit: 0 ok; 1 console errors, unfinished page script or no screenshot; 2 usage;
# 77 Chromium not installed (callers map it to a skip). $CHROMIUM overrides the browser path.
set -euo pipefail

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
  echo "usage: $0 PAGE.html OUT.png [DOM.html]" >&2
  exit 2
fi
page=$1
png=$2
dom_out=${3:-}
[ -f "$page" ] || { echo "render_html: $page: no such file" >&2; exit 2; }

chromium=${CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$chromium" ]; then
  chromium=$(command -v chromium || command -v chromium-browser || true)
fi
if [ -z "$chromium" ] || [ ! -x "$chromium" ]; then
  echo "render_html: skipped: Chromium not found (apt-get install chromium, or set CHROMIUM)"
  exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/porttool-render.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# file:// URL of the page, percent-encoding every byte that is not plainly safe in a path.
abs=$(cd "$(dirname "$page")" && pwd)/$(basename "$page")
url=file://
LC_ALL=C
for ((k = 0; k < ${#abs}; k++)); do
  c=${abs:k:1}
  case $c in
    [A-Za-z0-9/._~-]) url+=$c ;;
    *) url+=$(printf '%%%02X' "'$c") ;;
  esac
done

rm -f "$png"
start=$(date +%s%N)
# --virtual-time-budget lets the page finish loading and run its scripts before the DOM is
# dumped and the screenshot taken; the other flags keep Chromium off the network and quiet.
rc=0
timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --disable-crash-reporter --disable-extensions --mute-audio --hide-scrollbars \
  --force-device-scale-factor=1 --user-data-dir="$tmp/profile" \
  --enable-logging=stderr --v=0 --virtual-time-budget=2000 \
  --window-size=1400,2000 --screenshot="$png" --dump-dom "$url" \
  >"$tmp/dom.html" 2>"$tmp/chromium.log" || rc=$?
ms=$((($(date +%s%N) - start) / 1000000))
if [ "$rc" -ne 0 ]; then
  echo "render_html: chromium exited $rc" >&2
  grep -v -e dbus -e bluez -e 'unexpected operator' "$tmp/chromium.log" | tail -20 >&2
  exit 1
fi

errors=0
problems=()
# Console messages, whatever their level: the page logs nothing when it is healthy.
while IFS= read -r line; do
  problems+=("console: ${line#*:CONSOLE*] }")
done < <(grep -a ':CONSOLE' "$tmp/chromium.log" || true)
errors=${#problems[@]}

html_tag=$(grep -a -o -m1 '<html[^>]*>' "$tmp/dom.html" || true)
if [[ $html_tag == *data-pt-errors=* ]]; then
  page_errors=$(sed -n 's/.*data-pt-errors="\([0-9]*\)".*/\1/p' <<<"$html_tag")
  if [ "${page_errors:-0}" -gt "$errors" ]; then errors=$page_errors; fi
  if [[ $html_tag != *data-pt-ready=\"1\"* ]]; then
    problems+=("page: its script did not run to the end (no data-pt-ready)")
    errors=$((errors + 1))
  fi
  # What the page recorded itself (the <pre id="pt-diagnostics"> text).
  recorded=$(perl -0777 -ne 'if (/<pre id="pt-diagnostics"[^>]*>(.*?)<\/pre>/s) {
      $_ = $1; s/&lt;/</g; s/&gt;/>/g; s/&quot;/"/g; s/&#39;/\x27/g; s/&amp;/&/g; print }' \
      "$tmp/dom.html")
  while IFS= read -r line; do
    [ -n "$line" ] && problems+=("page: $line")
  done <<<"$recorded"
else
  echo "render_html: note: the page has no porttool diagnostics; counting console messages only"
fi

if [ -n "$dom_out" ]; then cp "$tmp/dom.html" "$dom_out"; fi
boxes=$(grep -a -o '<g class="node"' "$tmp/dom.html" | wc -l)
echo "boxes $boxes"
echo "console errors $errors"
for p in "${problems[@]+"${problems[@]}"}"; do echo "  $p"; done

if [ ! -s "$png" ]; then
  echo "render_html: chromium wrote no screenshot to $png" >&2
  exit 1
fi
echo "screenshot $png ($(stat -c %s "$png") bytes, chromium $((ms / 1000)).$((ms % 1000 / 100)) s)"
[ "$errors" -eq 0 ]
