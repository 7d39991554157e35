variable "project" {
  description = "GCP project that runs gpugate, its Batch jobs, Pub/Sub and Cloud SQL."
  type        = string
}

variable "region" {
  description = "Region for Cloud SQL and the default Batch location."
  type        = string
  default     = "us-central1"
}

variable "enable_apis" {
  description = "Enable the Google APIs gpugate needs (Batch, Compute, Pub/Sub, Cloud SQL Admin, IAM, Logging, Artifact Registry)."
  type        = bool
  default     = true
}

# --- identities -------------------------------------------------------------

variable "gpugate_service_account_id" {
  description = "account_id of the service account gpugate runs as (gpugate@PROJECT.iam.gserviceaccount.com; deploy/k8s/serviceaccount.yaml names it)."
  type        = string
  default     = "gpugate"
}

variable "batch_service_account_id" {
  description = "account_id of the service account the Batch job VMs run as."
  type        = string
  default     = "gpugate-batch"
}

variable "grant_default_compute_sa" {
  description = "Also let gpugate act as the Compute Engine default service account. Batch runs a job as that account when the job request names none, which gpugate's requests do today."
  type        = bool
  default     = true
}

variable "k8s_namespace" {
  description = "Kubernetes namespace of the gpugate ServiceAccount (Workload Identity binding). Empty: no binding (VM/systemd deployments)."
  type        = string
  default     = "gpugate"
}

variable "k8s_service_account" {
  description = "Name of the Kubernetes ServiceAccount gpugate runs as."
  type        = string
  default     = "gpugate"
}

# --- Pub/Sub ----------------------------------------------------------------

variable "pubsub_topic_name" {
  description = "Pub/Sub topic Batch publishes job state changes to."
  type        = string
  default     = "gpugate-batch-notifications"
}

variable "gpugate_public_host" {
  description = "Public HTTPS host name of gpugate (Ingress/Gateway/load balancer) that Pub/Sub pushes to: https://HOST/v1/batch/notifications. Empty: no push subscription."
  type        = string
  default     = ""
}

variable "pubsub_push_secret" {
  description = "Not used by the push subscription any more (it authenticates with OIDC); kept so that existing tfvars still apply. The ?token= secret is for local use only. Stored in the Terraform state: keep the state private."
  type        = string
  sensitive   = true
  default     = ""

  validation {
    condition     = var.pubsub_push_secret == "" || can(regex("^[A-Za-z0-9._~-]{16,}$", var.pubsub_push_secret))
    error_message = "pubsub_push_secret: at least 16 URL-safe characters (A-Z a-z 0-9 . _ ~ -), since it is sent as a query parameter."
  }
}

# --- Cloud SQL --------------------------------------------------------------

variable "sql_instance_name" {
  description = "Cloud SQL instance name."
  type        = string
  default     = "gpugate-pg"
}

variable "sql_tier" {
  description = "Cloud SQL machine tier."
  type        = string
  default     = "db-custom-2-7680"
}

variable "sql_high_availability" {
  description = "REGIONAL (synchronous standby in another zone, automatic failover) instead of ZONAL."
  type        = bool
  default     = true
}

variable "sql_disk_size_gb" {
  description = "Initial disk size; grows automatically."
  type        = number
  default     = 20
}

variable "sql_private_network" {
  description = "Self link or ID of the VPC for a private IP (requires Private Service Access on that VPC). Empty: public IP with no authorized networks, reachable only through the Cloud SQL Auth Proxy or connectors."
  type        = string
  default     = ""
}

variable "sql_backup_retained" {
  description = "Number of daily backups kept (point-in-time recovery is on)."
  type        = number
  default     = 14
}

variable "sql_max_connections" {
  description = "PostgreSQL max_connections. Each gpugate replica opens GPUGATE_DB_POOL_SIZE + 6 connections. 0 keeps the tier's default."
  type        = number
  default     = 0
}

variable "db_name" {
  description = "Database gpugate uses."
  type        = string
  default     = "gpugate"
}

variable "db_user" {
  description = "PostgreSQL user gpugate connects as."
  type        = string
  default     = "gpugate"
}

variable "db_password" {
  description = "Password of db_user. Stored in the Terraform state: keep the state private."
  type        = string
  sensitive   = true
}

variable "deletion_protection" {
  description = "Refuse to destroy the Cloud SQL instance."
  type        = bool
  default     = true
}

# --- images -----------------------------------------------------------------

variable "create_artifact_registry" {
  description = "Create the Docker repository the image is pushed to (LOCATION-docker.pkg.dev/PROJECT/gpugate)."
  type        = bool
  default     = true
}

variable "artifact_registry_location" {
  description = "Location of the Docker repository (\"us\" gives us-docker.pkg.dev)."
  type        = string
  default     = "us"
}
