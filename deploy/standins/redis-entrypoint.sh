#!/bin/sh
set -eu
if [ "${1#-}" != "$1" ] || [ "${1%.conf}" != "$1" ]; then set -- redis-server "$@"; fi
if [ "$1" = redis-server ]; then
  case "${2:-}" in
  *.conf) ;;
  *)
    shift
    set -- redis-server --protected-mode no "$@"
    ;;
  esac
fi
if [ "$1" = redis-server ] && [ "$(id -u)" = 0 ]; then
  chown -R redis:redis /data 2>/dev/null || true
  exec setpriv --reuid=redis --regid=redis --init-groups "$@"
fi
exec "$@"
