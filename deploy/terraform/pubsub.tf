# Batch publishes job state changes to this topic; an authenticated push
# subscription delivers them to POST /v1/batch/notifications on gpugate with
# a Google-signed OIDC token of the gpugate-pubsub-push service account
# (audience https://HOST/v1/batch/notifications), which gpugate verifies
# (GPUGATE_PUBSUB_AUDIENCE, GPUGATE_PUBSUB_SERVICE_ACCOUNT). The status sync
# loop still reconciles every GPUGATE_SYNC_INTERVAL_MS, so a lost push only
# delays an update.

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

# The identity Pub/Sub signs pushes as; it needs no role of its own.
resource "google_service_account" "pubsub_push" {
  project      = var.project
  account_id   = "gpugate-pubsub-push"
  display_name = "gpugate Pub/Sub push (OIDC)"

  depends_on = [google_project_service.apis]
}

locals {
  push_audience = "https://${var.gpugate_public_host}/v1/batch/notifications"
}

resource "google_pubsub_subscription" "batch_notifications_push" {
  count = var.gpugate_public_host == "" ? 0 : 1

  project = var.project
  name    = "${var.pubsub_topic_name}-push"
  topic   = google_pubsub_topic.batch_notifications.id

  ack_deadline_seconds       = 30
  message_retention_duration = "3600s"

  push_config {
    push_endpoint = local.push_audience
    oidc_token {
      service_account_email = google_service_account.pubsub_push.email
      audience              = local.push_audience
    }
  }

  retry_policy {
    minimum_backoff = "5s"
    maximum_backoff = "300s"
  }

  expiration_policy {
    ttl = "" # never expire
  }
}
