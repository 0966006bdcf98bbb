"""The developer portal: sign-up, log-in, dashboard and admin pages (portal.md)."""
