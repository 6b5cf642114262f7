#!/usr/bin/env bash
# Makes sure the local PostgreSQL (127.0.0.1:5432), MariaDB (127.0.0.1:3306,
# root without a password) and Redis (127.0.0.1:6379) answer, starting them
# when they are installed but stopped. Under CI=true a
# server that cannot be reached is an error; elsewhere the tests that need it
# are skipped, and say so.
set -u

pg_up() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; }
# A ping as the tests log in (root over TCP), or, without the client, an open port.
mariadb_up() {
  if command -v mariadb-admin >/dev/null 2>&1; then
    mariadb-admin --protocol=tcp -h 127.0.0.1 -P 3306 -u root --connect-timeout=2 ping \
      >/dev/null 2>&1
  else
    (exec 3<>/dev/tcp/127.0.0.1/3306) 2>/dev/null
  fi
}
redis_up() { [ "$(redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null)" = "PONG" ]; }

wait_for() {
  local check=$1
  for _ in $(seq 1 30); do
    "$check" && return 0
    sleep 1
  done
  return 1
}

status=0
if ! pg_up; then
  if command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
    echo "starting PostgreSQL"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n 1)" main start || true
    wait_for pg_up || true
  fi
fi
if pg_up; then echo "PostgreSQL: up"; else echo "PostgreSQL: NOT reachable at 127.0.0.1:5432" >&2; status=1; fi

if ! mariadb_up; then
  if [ -x /usr/sbin/mariadbd ] && command -v start-stop-daemon >/dev/null 2>&1; then
    echo "starting MariaDB"
    start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd || true
    wait_for mariadb_up || true
  fi
fi
if mariadb_up; then echo "MariaDB: up"; else echo "MariaDB: NOT reachable at 127.0.0.1:3306" >&2; status=1; fi

if ! redis_up; then
  if command -v redis-server >/dev/null 2>&1; then
    echo "starting Redis"
    redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no || true
    wait_for redis_up || true
  fi
fi
if redis_up; then echo "Redis: up"; else echo "Redis: NOT reachable at 127.0.0.1:6379" >&2; status=1; fi

if [ "$status" -ne 0 ] && [ "${CI:-}" = "true" ]; then
  echo "CI=true: the integration servers are required" >&2
  exit 1
fi
exit 0
