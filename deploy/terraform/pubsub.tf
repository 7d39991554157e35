# Batch publishes job state changes to this topic; a push subscription
# delivers them to POST /v1/batch/notifications on gpugate, which checks the
# shared secret carried as ?token=. The status sync loop still reconciles
# every GPUGATE_SYNC_INTERVAL_MS, so a lost push only delays an update.

resource "google_pubsub_topic" "batch_notifications" {
  project                    = var.project
  name                       = var.pubsub_topic_name
  message_retention_duration = "86400s"

  depends_on = [google_project_service.apis]
}

# Batch publishes as the job's service account. (For a topic in another
# project, grant the same role to the job project's Batch service agent.)
resource "google_pubsub_topic_iam_member" "batch_publisher" {
  project = var.project
  topic   = google_pubsub_topic.batch_notifications.name
  role    = "roles/pubsub.publisher"
  member  = google_service_account.batch.member
}

resource "google_pubsub_topic_iam_member" "default_compute_publisher" {
  count = var.grant_default_compute_sa ? 1 : 0

  project = var.project
  topic   = google_pubsub_topic.batch_notifications.name
  role    = "roles/pubsub.publisher"
  member  = "serviceAccount:${local.default_compute_sa}"
}

# Batch asks whoever creates a job with notifications for Pub/Sub Editor on
# the topic; granted on this topic only.
resource "google_pubsub_topic_iam_member" "gpugate_editor" {
  project = var.project
  topic   = google_pubsub_topic.batch_notifications.name
  role    = "roles/pubsub.editor"
  member  = google_service_account.gpugate.member
}

resource "google_pubsub_subscription" "batch_notifications_push" {
  count = var.gpugate_public_host == "" ? 0 : 1

  project = var.project
  name    = "${var.pubsub_topic_name}-push"
  topic   = google_pubsub_topic.batch_notifications.id

  ack_deadline_seconds       = 30
  message_retention_duration = "3600s"

  push_config {
    push_endpoint = "https://${var.gpugate_public_host}/v1/batch/notifications?token=${var.pubsub_push_secret}"
  }

  retry_policy {
    minimum_backoff = "5s"
    maximum_backoff = "300s"
  }

  expiration_policy {
    ttl = "" # never expire
  }

  lifecycle {
    precondition {
      condition     = var.pubsub_push_secret != ""
      error_message = "pubsub_push_secret must be set when gpugate_public_host is."
    }
  }
}
