# PostgreSQL 15 on Cloud SQL: the only state gpugate has. REGIONAL gives a
# synchronous standby and automatic failover; gpugate reconnects on its own
# (requests answer 503 while the database is away).

resource "google_sql_database_instance" "gpugate" {
  project             = var.project
  name                = var.sql_instance_name
  region              = var.region
  database_version    = "POSTGRES_15"
  deletion_protection = var.deletion_protection

  settings {
    tier                        = var.sql_tier
    availability_type           = var.sql_high_availability ? "REGIONAL" : "ZONAL"
    disk_type                   = "PD_SSD"
    disk_size                   = var.sql_disk_size_gb
    disk_autoresize             = true
    deletion_protection_enabled = var.deletion_protection

    user_labels = {
      app = "gpugate"
    }

    backup_configuration {
      enabled                        = true
      start_time                     = "03:00"
      point_in_time_recovery_enabled = true
      transaction_log_retention_days = 7

      backup_retention_settings {
        retained_backups = var.sql_backup_retained
        retention_unit   = "COUNT"
      }
    }

    ip_configuration {
      # Private IP when a VPC is given; otherwise a public IP with no
      # authorized networks (only the Auth Proxy / connectors get in).
      ipv4_enabled    = var.sql_private_network == ""
      private_network = var.sql_private_network == "" ? null : var.sql_private_network
      ssl_mode        = "ENCRYPTED_ONLY"
    }

    maintenance_window {
      day          = 7
      hour         = 4
      update_track = "stable"
    }

    insights_config {
      query_insights_enabled = true
    }

    dynamic "database_flags" {
      for_each = var.sql_max_connections > 0 ? [tostring(var.sql_max_connections)] : []
      content {
        name  = "max_connections"
        value = database_flags.value
      }
    }
  }

  depends_on = [google_project_service.apis]
}

resource "google_sql_database" "gpugate" {
  project  = var.project
  instance = google_sql_database_instance.gpugate.name
  name     = var.db_name
}

resource "google_sql_user" "gpugate" {
  project  = var.project
  instance = google_sql_database_instance.gpugate.name
  name     = var.db_user
  password = var.db_password
}
