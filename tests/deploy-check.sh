#!/usr/bin/env bash
# tests/deploy-check.sh — offline checks of the deployment material in deploy/:
# the Dockerfile, the Kubernetes manifests, the systemd unit and the
# Terraform. Needs node and deploy/tools/node_modules (deploy/install-deps.sh);
# kubectl, systemd-analyze and terraform are used when installed and
# skipped with a notice otherwise. Nothing here touches the network.
#
# Prints one PASS/FAIL (or SKIP) line per check, then "N passed, N failed";
# exits non-zero when a check failed.
set -euo pipefail
cd "$(dirname "$0")/.."

JSYAML="$PWD/deploy/tools/node_modules/js-yaml"
K8S=deploy/k8s
UNIT=deploy/systemd/gpugate.service
UNIT_ENV=deploy/systemd/gpugate.env
DOCKERFILE=deploy/Dockerfile
TF=deploy/terraform

passed=0
failed=0
work=$(mktemp -d /tmp/gpugate-deploy-check.XXXXXX)
trap 'rm -rf "$work"' EXIT

# check NAME CMD...: run CMD, print PASS/FAIL, show its output on failure
check() {
  local name=$1
  shift
  if "$@" >"$work/$name.log" 2>&1; then
    passed=$((passed + 1))
    echo "PASS: $name"
  else
    failed=$((failed + 1))
    echo "FAIL: $name"
    sed 's/^/    /' "$work/$name.log" | tail -n 40
  fi
}

skip() {
  echo "SKIP: $1 ($2)"
}

# --- Kubernetes -------------------------------------------------------------

# Every manifest parses; every document has apiVersion and kind; the
# kustomization lists existing files and not the Secret example.
k8s_yaml() {
  [ -d "$JSYAML" ] || {
    echo "js-yaml missing: run deploy/install-deps.sh"
    return 1
  }
  JSYAML="$JSYAML" node - "$K8S" <<'EOF'
const fs = require('fs'), path = require('path');
const yaml = require(process.env.JSYAML);
const dir = process.argv[2];
let bad = 0;
const fail = (m) => { console.log(m); bad++; };
const files = fs.readdirSync(dir).filter((f) => /\.ya?ml$/.test(f));
if (!files.includes('kustomization.yaml')) fail('no kustomization.yaml');
for (const f of files) {
  let docs;
  try {
    docs = yaml.loadAll(fs.readFileSync(path.join(dir, f), 'utf8'));
  } catch (e) {
    fail(`${f}: ${e.message}`);
    continue;
  }
  docs.forEach((d, i) => {
    if (d === null || d === undefined) return;
    if (typeof d !== 'object') return fail(`${f}#${i}: not a mapping`);
    if (!d.apiVersion || !d.kind) fail(`${f}#${i}: apiVersion/kind missing`);
    if (f !== 'kustomization.yaml' && !(d.metadata && d.metadata.name))
      fail(`${f}#${i}: metadata.name missing`);
    if (f !== 'kustomization.yaml' && d.metadata && d.metadata.namespace)
      fail(`${f}#${i}: sets a namespace; the manifests are namespace-agnostic`);
  });
  console.log(`${f}: ${docs.filter((d) => d).length} document(s)`);
}
const k = yaml.load(fs.readFileSync(path.join(dir, 'kustomization.yaml'), 'utf8'));
for (const r of k.resources || []) {
  if (!fs.existsSync(path.join(dir, r))) fail(`kustomization: ${r} does not exist`);
  if (/secret/i.test(r)) fail(`kustomization: ${r} must not be applied (secrets are created out of band)`);
}
process.exit(bad ? 1 : 0);
EOF
}

# The manifests agree with each other: probes, security context, secret
# files under mounted paths, secret keys, the Job's image, the Service's
# port, the PDB's selector, Workload Identity.
k8s_consistency() {
  JSYAML="$JSYAML" node - "$K8S" <<'EOF'
const fs = require('fs'), path = require('path');
const yaml = require(process.env.JSYAML);
const dir = process.argv[2];
let bad = 0;
const fail = (m) => { console.log(m); bad++; };
const objs = [];
for (const f of fs.readdirSync(dir).filter((f) => /\.ya?ml$/.test(f) && f !== 'kustomization.yaml'))
  for (const d of yaml.loadAll(fs.readFileSync(path.join(dir, f), 'utf8'))) if (d) objs.push(d);
const one = (kind, pred = () => true) => {
  const o = objs.filter((x) => x.kind === kind && pred(x));
  if (o.length !== 1) fail(`expected one ${kind}, found ${o.length}`);
  return o[0] || {};
};
const get = (o, p) => p.split('.').reduce((a, k) => (a == null ? a : a[k]), o);
const subset = (sel, labels) => Object.entries(sel || {}).every(([k, v]) => (labels || {})[k] === v);

const cm = one('ConfigMap');
const data = cm.data || {};
for (const [k, v] of Object.entries(data)) {
  if (typeof v !== 'string') fail(`ConfigMap ${k}: value must be a string (quote it), got ${typeof v}`);
  if (!/^[A-Z][A-Z0-9_]*$/.test(k)) fail(`ConfigMap ${k}: not an environment variable name`);
}
if (data.GPUGATE_MIGRATE_ON_START !== 'false') fail('ConfigMap: GPUGATE_MIGRATE_ON_START must be "false" (the Job migrates)');
if (!/^0\.0\.0\.0:\d+$/.test(data.GPUGATE_LISTEN || '')) fail('ConfigMap: GPUGATE_LISTEN must listen on 0.0.0.0');

const dep = one('Deployment');
const pod = get(dep, 'spec.template.spec') || {};
const c = (pod.containers || [])[0] || {};
if (!(get(dep, 'spec.replicas') >= 2)) fail('Deployment: replicas < 2');
if (get(c, 'readinessProbe.httpGet.path') !== '/readyz') fail('Deployment: readinessProbe is not GET /readyz');
if (get(c, 'livenessProbe.httpGet.path') !== '/healthz') fail('Deployment: livenessProbe is not GET /healthz');
if (get(pod, 'securityContext.runAsNonRoot') !== true) fail('Deployment: runAsNonRoot is not true');
if (!(get(pod, 'securityContext.runAsUser') > 0)) fail('Deployment: runAsUser must be a non-zero uid');
if (get(c, 'securityContext.readOnlyRootFilesystem') !== true) fail('Deployment: readOnlyRootFilesystem is not true');
if (get(c, 'securityContext.allowPrivilegeEscalation') !== false) fail('Deployment: allowPrivilegeEscalation is not false');
if (!(get(c, 'securityContext.capabilities.drop') || []).includes('ALL')) fail('Deployment: capabilities do not drop ALL');
if (!get(c, 'resources.requests.cpu') || !get(c, 'resources.requests.memory')) fail('Deployment: no resource requests');
if (!(pod.terminationGracePeriodSeconds > 0)) fail('Deployment: no terminationGracePeriodSeconds');
if (!(pod.topologySpreadConstraints || get(pod, 'affinity.podAntiAffinity'))) fail('Deployment: no spreading (topologySpreadConstraints/podAntiAffinity)');
if (!(c.envFrom || []).some((e) => get(e, 'configMapRef.name') === get(cm, 'metadata.name'))) fail('Deployment: envFrom does not use the ConfigMap');
const dbEnv = (c.env || []).find((e) => e.name === 'GPUGATE_DATABASE_URL');
if (!get(dbEnv, 'valueFrom.secretKeyRef')) fail('Deployment: GPUGATE_DATABASE_URL does not come from a Secret');

// every secret file the ConfigMap names lies under a mounted volume
const mounts = c.volumeMounts || [];
const files = Object.entries(data).filter(([k]) => /_FILE$/.test(k) && data[k]).map(([k, v]) => [k, v]);
for (const [k, v] of files) {
  const m = mounts.find((m) => v.startsWith(m.mountPath.replace(/\/?$/, '/')));
  if (!m) { fail(`ConfigMap ${k}=${v}: not under any volumeMount`); continue; }
  const vol = (pod.volumes || []).find((x) => x.name === m.name);
  const items = get(vol, 'secret.items');
  const file = v.slice(m.mountPath.replace(/\/?$/, '/').length);
  if (items && !items.some((i) => i.path === file)) fail(`ConfigMap ${k}: ${file} is not an item of volume ${m.name}`);
}

// secret names and keys referenced exist in secret.example.yaml
const secrets = {};
for (const s of objs.filter((o) => o.kind === 'Secret'))
  secrets[s.metadata.name] = Object.keys(Object.assign({}, s.data, s.stringData));
const refs = [];
for (const w of objs.filter((o) => o.kind === 'Deployment' || o.kind === 'Job')) {
  const ps = get(w, 'spec.template.spec') || {};
  for (const ct of ps.containers || [])
    for (const e of ct.env || []) if (get(e, 'valueFrom.secretKeyRef')) refs.push([w.kind, e.valueFrom.secretKeyRef.name, e.valueFrom.secretKeyRef.key]);
  for (const v of ps.volumes || []) if (v.secret) {
    if (!v.secret.optional && !(v.secret.secretName in secrets)) fail(`${w.kind}: secret ${v.secret.secretName} has no example`);
    for (const i of v.secret.items || []) refs.push([w.kind, v.secret.secretName, i.key]);
  }
}
for (const [kind, name, key] of refs)
  if (!(secrets[name] || []).includes(key)) fail(`${kind}: secret ${name} key ${key} is not in secret.example.yaml`);

const job = one('Job');
const jc = (get(job, 'spec.template.spec.containers') || [])[0] || {};
if (jc.image !== c.image) fail(`Job image ${jc.image} differs from the Deployment's ${c.image}`);
if (JSON.stringify([].concat(jc.command || [], jc.args || [])) !== '["migrate"]') fail('Job does not run `gpugate migrate`');
if (!(jc.envFrom || []).some((e) => get(e, 'configMapRef.name') === get(cm, 'metadata.name'))) fail('Job: envFrom does not use the ConfigMap');
if (get(job, 'spec.template.spec.securityContext.runAsNonRoot') !== true) fail('Job: runAsNonRoot is not true');

const svc = one('Service');
const port = (get(svc, 'spec.ports') || [])[0] || {};
const cport = (c.ports || []).find((p) => p.name === port.targetPort || p.containerPort === port.targetPort);
if (!cport) fail(`Service targetPort ${port.targetPort} is not a container port`);
if (!subset(get(svc, 'spec.selector'), get(dep, 'spec.template.metadata.labels'))) fail('Service selector does not match the pods');

const pdb = one('PodDisruptionBudget');
if (!(get(pdb, 'spec.minAvailable') >= 1) || get(pdb, 'spec.minAvailable') >= get(dep, 'spec.replicas')) fail('PDB minAvailable must be between 1 and replicas - 1');
if (!subset(get(pdb, 'spec.selector.matchLabels'), get(dep, 'spec.template.metadata.labels'))) fail('PDB selector does not match the pods');

const sa = one('ServiceAccount');
if (!/^[^@]+@[^@]+\.iam\.gserviceaccount\.com$/.test(get(sa, 'metadata.annotations')?.['iam.gke.io/gcp-service-account'] || ''))
  fail('ServiceAccount: no iam.gke.io/gcp-service-account annotation');
if (pod.serviceAccountName !== get(sa, 'metadata.name')) fail('Deployment does not run as the Workload Identity ServiceAccount');

console.log(`${objs.length} objects checked`);
process.exit(bad ? 1 : 0);
EOF
}

# --- configuration names ----------------------------------------------------

# Every GPUGATE_* variable the deployment material sets is one README.md's
# configuration table documents.
env_documented() {
  local documented used missing
  documented=$(awk '/^## Configuration/{on=1; next} /^## /{on=0} on && /^\| *`/' README.md |
    awk -F'|' '{print $2}' | grep -oE 'GPUGATE_[A-Z0-9_]+' | sort -u)
  if [ -z "$documented" ]; then
    echo "README.md: no configuration table found under '## Configuration'"
    return 1
  fi
  used=$(cat "$K8S"/*.yaml "$UNIT" "$UNIT_ENV" "$DOCKERFILE" deploy/README.md |
    grep -oE 'GPUGATE_[A-Z0-9_]+' | sort -u)
  missing=$(comm -13 <(echo "$documented") <(echo "$used"))
  echo "$(wc -l <<<"$used") variables used, $(wc -l <<<"$documented") documented"
  if [ -n "$missing" ]; then
    echo "not in README.md's configuration table:"
    echo "$missing"
    return 1
  fi
}

# --- Dockerfile ---------------------------------------------------------------

dockerfile() {
  local rc=0 user f
  need() {
    if ! grep -qE "$1" "$DOCKERFILE"; then
      echo "$DOCKERFILE: missing $2"
      rc=1
    fi
  }
  if [ "$(grep -cE '^FROM ' "$DOCKERFILE")" -lt 2 ]; then
    echo "$DOCKERFILE: not multi-stage (fewer than two FROM lines)"
    rc=1
  fi
  need '^FROM .* AS build' 'a build stage (FROM ... AS build)'
  need '^ARG DEBIAN_IMAGE=debian:12$' 'the debian:12 builder'
  need '^ARG DEBIAN_SLIM_IMAGE=debian:12-slim$' 'the debian:12-slim runtime'
  need '^COPY --from=build ' 'a COPY from the build stage'
  need 'make .*build/gpugate' 'make build/gpugate'
  need '^ENTRYPOINT \["/usr/local/bin/gpugate"\]' 'ENTRYPOINT ["/usr/local/bin/gpugate"]'
  need '^CMD \["serve"\]' 'CMD ["serve"]'
  need '^EXPOSE 8080' 'EXPOSE 8080'
  need '^ENV GPUGATE_LISTEN=0\.0\.0\.0:8080' 'ENV GPUGATE_LISTEN=0.0.0.0:8080'
  user=$(grep -E '^USER ' "$DOCKERFILE" | tail -n 1 | awk '{print $2}')
  case "${user%%:*}" in
  '' | 0 | root)
    echo "$DOCKERFILE: the last USER (${user:-none}) is not a non-root user"
    rc=1
    ;;
  esac
  # files the build takes from npm packages (the context excludes
  # node_modules) must come from the Dockerfile's tools stage
  while read -r f; do
    if [ -n "$f" ] && ! grep -qF -- "$f" "$DOCKERFILE"; then
      echo "$DOCKERFILE: the Makefile builds with $f, which the image build does not provide"
      rc=1
    fi
  done < <(grep -oE 'deploy/tools/node_modules/[^ )]+' Makefile | sort -u)
  for pattern in '^\.git$' '^build$' '^var$' '^deploy/tools/node_modules$'; do
    if ! grep -qE "$pattern" deploy/Dockerfile.dockerignore 2>/dev/null; then
      echo "deploy/Dockerfile.dockerignore: does not exclude $pattern"
      rc=1
    fi
  done
  return $rc
}

# --- systemd ------------------------------------------------------------------

systemd_hardening() {
  local rc=0 key
  for key in 'Type=simple' 'ExecStartPre=/usr/local/bin/gpugate migrate' \
    'ExecStart=/usr/local/bin/gpugate serve' 'EnvironmentFile=/etc/gpugate/gpugate.env' \
    'DynamicUser=yes' 'NoNewPrivileges=yes' 'ProtectSystem=strict' 'ProtectHome=yes' \
    'PrivateTmp=yes' 'PrivateDevices=yes' 'ProtectKernelTunables=yes' \
    'ProtectKernelModules=yes' 'ProtectKernelLogs=yes' 'ProtectControlGroups=yes' \
    'RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX' 'RestrictNamespaces=yes' \
    'LockPersonality=yes' 'MemoryDenyWriteExecute=yes' 'SystemCallFilter=@system-service' \
    'CapabilityBoundingSet=' 'Restart=on-failure' 'KillSignal=SIGTERM'; do
    if ! grep -qxF "$key" "$UNIT"; then
      echo "$UNIT: missing '$key'"
      rc=1
    fi
  done
  if ! grep -qE '^LoadCredential=' "$UNIT"; then
    echo "$UNIT: no LoadCredential= for the secret files"
    rc=1
  fi
  if grep -qE '^(GPUGATE_JWT_HS256_SECRET_FILE|GPUGATE_PUBSUB_PUSH_SECRET_FILE)=' "$UNIT_ENV"; then
    echo "$UNIT_ENV: sets a *_SECRET_FILE the unit takes from its credentials"
    rc=1
  fi
  return $rc
}

# systemd-analyze verify on a copy whose commands exist on any machine;
# any complaint about the unit fails.
systemd_verify() {
  local out
  mkdir -p "$work/unit"
  sed -e 's#/usr/local/bin/gpugate#/bin/true#g' "$UNIT" >"$work/unit/gpugate.service"
  out=$(systemd-analyze verify "$work/unit/gpugate.service" 2>&1) || {
    echo "$out"
    return 1
  }
  if grep -F 'gpugate.service' <<<"$out"; then
    return 1
  fi
}

# --- Terraform ----------------------------------------------------------------

terraform_fmt() {
  terraform fmt -check -recursive -diff "$TF"
}

# The configuration loads (block structure, duplicates) without providers,
# and every var./local. reference is declared.
terraform_config() {
  local rc=0 declared used name out
  if command -v terraform >/dev/null 2>&1; then
    out=$(terraform -chdir="$TF" providers -no-color 2>&1) || {
      echo "$out"
      rc=1
    }
  fi
  declared=$(grep -hoE '^variable "[a-z0-9_]+"' "$TF"/*.tf | cut -d'"' -f2 | sort -u)
  used=$(grep -hoE '\bvar\.[a-z0-9_]+' "$TF"/*.tf | cut -d. -f2 | sort -u)
  for name in $(comm -13 <(echo "$declared") <(echo "$used")); do
    echo "var.$name is used but not declared"
    rc=1
  done
  declared=$(awk '/^locals \{/{on=1; next} on && /^\}/{on=0} on' "$TF"/*.tf |
    grep -oE '^  [a-z0-9_]+ +=' | awk '{print $1}' | sort -u)
  used=$(grep -hoE '\blocal\.[a-z0-9_]+' "$TF"/*.tf | cut -d. -f2 | sort -u)
  for name in $(comm -13 <(echo "$declared") <(echo "$used")); do
    echo "local.$name is used but not declared"
    rc=1
  done
  if ! grep -qE 'source += "hashicorp/google"' "$TF"/*.tf; then
    echo "no hashicorp/google provider requirement"
    rc=1
  fi
  return $rc
}

# --- run ----------------------------------------------------------------------

check k8s-yaml k8s_yaml
check k8s-consistency k8s_consistency
if command -v kubectl >/dev/null 2>&1; then
  check k8s-kustomize kubectl kustomize "$K8S"
else
  skip k8s-kustomize "kubectl not installed"
fi
check env-documented env_documented
check dockerfile dockerfile
check systemd-hardening systemd_hardening
if command -v systemd-analyze >/dev/null 2>&1; then
  check systemd-verify systemd_verify
else
  skip systemd-verify "systemd-analyze not installed"
fi
if command -v terraform >/dev/null 2>&1; then
  check terraform-fmt terraform_fmt
else
  skip terraform-fmt "terraform not installed"
fi
check terraform-config terraform_config

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
