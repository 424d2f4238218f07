#!/usr/bin/env bash
# The naive floor: curl streams the watch-list (de-chunked, over whatever HTTP
# version curl and the server agree on: h2 with the apiserver, unless the
# curl args say --http1.1), scan finds the newlines and stops at the
# initial-events-end bookmark; curl is then stopped (the stream stays open).
#
#   curl-floor.sh NAME SCAN URL CA HEADER_FILE [curl args...]
#
# HEADER_FILE holds "Authorization: Bearer ..." (so the token is not in argv).
set -u
name="$1" scan="$2" url="$3" ca="$4" hdr="$5"
shift 5
t0="$(date +%s.%N)"
exec 3< <(exec curl -sS -f -N --cacert "$ca" -H "@$hdr" "$@" "$url")
cpid=$!
"$scan" "$name" "$t0" <&3
st=$?
exec 3<&-
kill "$cpid" 2>/dev/null
wait "$cpid" 2>/dev/null
exit "$st"
