output "gpugate_service_account_email" {
  description = "Put in deploy/k8s/serviceaccount.yaml (iam.gke.io/gcp-service-account), or attach to the VM for systemd."
  value       = google_service_account.gpugate.email
}

output "batch_service_account_email" {
  description = "Service account for the Batch job VMs."
  value       = google_service_account.batch.email
}

output "workload_identity_member" {
  description = "Kubernetes ServiceAccount allowed to act as the gpugate service account."
  value       = var.k8s_namespace == "" ? null : "${var.project}.svc.id.goog[${var.k8s_namespace}/${var.k8s_service_account}]"
}

output "pubsub_topic" {
  description = "Topic for Batch job notifications (projects/PROJECT/topics/NAME)."
  value       = google_pubsub_topic.batch_notifications.id
}

output "pubsub_push_subscription" {
  description = "Push subscription delivering to /v1/batch/notifications (null without gpugate_public_host)."
  value       = try(google_pubsub_subscription.batch_notifications_push[0].id, null)
}

output "pubsub_push_service_account" {
  description = "GPUGATE_PUBSUB_SERVICE_ACCOUNT: the email Pub/Sub's push tokens carry."
  value       = google_service_account.pubsub_push.email
}

output "pubsub_push_audience" {
  description = "GPUGATE_PUBSUB_AUDIENCE: the audience of Pub/Sub's push tokens (null without gpugate_public_host)."
  value       = var.gpugate_public_host == "" ? null : local.push_audience
}

output "sql_connection_name" {
  description = "PROJECT:REGION:INSTANCE, for the Cloud SQL Auth Proxy or PgBouncer."
  value       = google_sql_database_instance.gpugate.connection_name
}

output "sql_ip_address" {
  description = "Private IP when sql_private_network is set, else the public IP."
  value       = local.db_host
}

# TCP keepalives both ways, so that a replica lost with its node releases the
# admission leader lock within about two minutes (the kernel default is two
# hours): libpq keepalives_* for the client side, tcp_keepalives_* (settable
# per session) for the server side.
locals {
  db_host       = var.sql_private_network != "" ? google_sql_database_instance.gpugate.private_ip_address : google_sql_database_instance.gpugate.public_ip_address
  db_url_params = "sslmode=require&keepalives_idle=30&keepalives_interval=10&keepalives_count=3&options=-c%20tcp_keepalives_idle%3D60%20-c%20tcp_keepalives_interval%3D10%20-c%20tcp_keepalives_count%3D6"
}

output "database_url_template" {
  description = "GPUGATE_DATABASE_URL with PASSWORD to replace (percent-encoded). Without sql_private_network, replace the host with the Cloud SQL Auth Proxy address; with PgBouncer, with its address."
  value       = "postgresql://${var.db_user}:PASSWORD@${local.db_host}:5432/${var.db_name}?${local.db_url_params}"
}

output "image_repository" {
  description = "Push the image here: docker push REPO/gpugate:TAG."
  value       = var.create_artifact_registry ? "${var.artifact_registry_location}-docker.pkg.dev/${var.project}/gpugate" : null
}
