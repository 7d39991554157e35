# The GCP side of gpugate: its identity and the roles Cloud Batch needs, the
# identity of the Batch job VMs, Workload Identity for the Kubernetes
# ServiceAccount, and an Artifact Registry repository for the image.
# pubsub.tf has the notification topic, cloudsql.tf the database.

data "google_project" "this" {
  project_id = var.project
}

locals {
  apis = toset([
    "batch.googleapis.com",
    "compute.googleapis.com",
    "pubsub.googleapis.com",
    "sqladmin.googleapis.com",
    "iam.googleapis.com",
    "logging.googleapis.com",
    "artifactregistry.googleapis.com",
  ])
  default_compute_sa = "${data.google_project.this.number}-compute@developer.gserviceaccount.com"
}

resource "google_project_service" "apis" {
  for_each = var.enable_apis ? local.apis : toset([])

  project            = var.project
  service            = each.value
  disable_on_destroy = false
}

# --- gpugate ----------------------------------------------------------------

resource "google_service_account" "gpugate" {
  project      = var.project
  account_id   = var.gpugate_service_account_id
  display_name = "gpugate API gateway"
  description  = "Creates, cancels and lists Cloud Batch jobs; writes logs; connects to Cloud SQL."

  depends_on = [google_project_service.apis]
}

resource "google_project_iam_member" "gpugate" {
  for_each = toset([
    "roles/batch.jobsEditor",
    "roles/logging.logWriter",
    "roles/cloudsql.client",
  ])

  project = var.project
  role    = each.value
  member  = google_service_account.gpugate.member
}

# --- Batch job VMs ----------------------------------------------------------

resource "google_service_account" "batch" {
  project      = var.project
  account_id   = var.batch_service_account_id
  display_name = "gpugate Batch jobs"
  description  = "Runs the Cloud Batch job VMs that gpugate creates."

  depends_on = [google_project_service.apis]
}

resource "google_project_iam_member" "batch" {
  for_each = toset([
    "roles/batch.agentReporter",
    "roles/logging.logWriter",
  ])

  project = var.project
  role    = each.value
  member  = google_service_account.batch.member
}

# gpugate creates jobs that run as the Batch service account.
resource "google_service_account_iam_member" "gpugate_acts_as_batch" {
  service_account_id = google_service_account.batch.name
  role               = "roles/iam.serviceAccountUser"
  member             = google_service_account.gpugate.member
}

# A job request that names no service account runs as the Compute Engine
# default service account, and its creator must be able to act as that one.
resource "google_service_account_iam_member" "gpugate_acts_as_default_compute" {
  count = var.grant_default_compute_sa ? 1 : 0

  service_account_id = "projects/${var.project}/serviceAccounts/${local.default_compute_sa}"
  role               = "roles/iam.serviceAccountUser"
  member             = google_service_account.gpugate.member

  depends_on = [google_project_service.apis]
}

# --- Workload Identity ------------------------------------------------------

# The Kubernetes ServiceAccount NAMESPACE/gpugate (deploy/k8s) may act as the
# gpugate service account; the cluster needs Workload Identity enabled
# (workload pool PROJECT.svc.id.goog).
resource "google_service_account_iam_member" "workload_identity" {
  count = var.k8s_namespace == "" ? 0 : 1

  service_account_id = google_service_account.gpugate.name
  role               = "roles/iam.workloadIdentityUser"
  member             = "serviceAccount:${var.project}.svc.id.goog[${var.k8s_namespace}/${var.k8s_service_account}]"
}

# --- image repository -------------------------------------------------------

resource "google_artifact_registry_repository" "gpugate" {
  count = var.create_artifact_registry ? 1 : 0

  project       = var.project
  location      = var.artifact_registry_location
  repository_id = "gpugate"
  format        = "DOCKER"
  description   = "gpugate container images (deploy/Dockerfile)"

  depends_on = [google_project_service.apis]
}
