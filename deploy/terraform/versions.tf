terraform {
  required_version = ">= 1.5"

  required_providers {
    google = {
      source = "hashicorp/google"
      # 5.x; settings.ip_configuration.ssl_mode of google_sql_database_instance
      # needs a recent 5.x release (5.43 has it).
      version = "~> 5.43"
    }
  }
}

provider "google" {
  project = var.project
  region  = var.region
}
