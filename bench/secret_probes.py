"""Probes for the secret rules: one line per credential format (made-up values in each format's documented
shape, never real keys) and credential file names, shared by bench_secret_rules.py and the end-to-end test
of the gate. Each value is assembled from parts so that no complete token sits in the repository's text."""

from __future__ import annotations

# format -> a line of code holding one made-up credential of that format.
TOKENS = {
    # The eight formats the issue found sent.
    "GitLab personal access token": "GITLAB = 'glpat-" + "Zq8xW2rT5yU1iO3pA7sD" + "'",
    "PyPI upload token": "PYPI = 'pypi-AgEIcHlwaS5vcmc" + "Qm9" * 25 + "'",
    "npm access token": "NPM = 'npm_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8" + "'",
    "Hugging Face token": "HF = 'hf_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZaBcDeFgH" + "'",
    "HashiCorp Vault token": "VAULT = 'hvs." + "CAESIJ8x2lQm4nV7" + "bT9wZk3yR6uP1sD5fG8hJ0kL" + "'",
    "DigitalOcean token": "DO = 'dop_v1_" + "0a1b2c3d4e5f6a7b" * 4 + "'",
    "SendGrid API key": "SG = 'SG."
    + "aBcDeFgHiJkLmNoPqRsTuV"
    + "."
    + "aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789-_aBcDe"
    + "'",
    "Stripe test key": "STRIPE = 'sk_test_" + "51HxYzAbCdEfGhIjKlMnOpQr" + "'",
    # Formats tandem already refused, and others detect-secrets knows.
    "AWS access key id": "AWS = 'AKIA" + "Q7RZ2V4N8K3M5P1X" + "'",
    "GitHub token": "GH = 'ghp_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789" + "'",
    "GitHub fine-grained token": "GH = 'github_pat_" + "11ABCDEFG0" + "aBcDeFgHiJ" * 6 + "'",
    "Slack bot token": "SLACK = 'xoxb-" + "1234567890-0987654321-aBcDeFgHiJkLmNoP" + "'",
    "Slack refresh token": "SLACK = 'xoxe-" + "1-aBcDeFgHiJkLmNoPqRsTuVwXyZ" + "'",
    "Slack webhook": "HOOK = 'https://hooks.slack.com/services/" + "T01ABCDEF/B01ABCDEF/aBcDeFgHiJkLmNoPqRsT" + "'",
    "Stripe live key": "STRIPE = 'sk_live_" + "aBcDeFgHiJkLmNoPqRsTuVwX" + "'",
    "OpenAI project key": "OPENAI = 'sk-proj-" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ012345" + "'",
    "OpenAI legacy key": "OPENAI = 'sk-" + "aBcDeFgHiJkLmNoPqRsT" + "T3BlbkFJ" + "aBcDeFgHiJkLmNoPqRsT" + "'",
    "Anthropic API key": "ANTHROPIC = 'sk-ant-api03-" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ" + "'",
    "Google API key": "GOOGLE = 'AIza" + "SyAbCdEfGhIjKlMnOpQrStUvWxYz0123456" + "'",
    "private key (PEM)": "-----BEGIN RSA " + "PRIVATE KEY-----",
    "private key (encrypted PEM)": "-----BEGIN ENCRYPTED " + "PRIVATE KEY-----",
    "Azure storage account key": "CONN = 'AccountKey=" + "aBcDeFgHiJ" * 8 + "aBcDeFgH" + "'",
    "Twilio API key": "TWILIO = 'SK" + "0123456789abcdef" * 2 + "'",
    "Mailchimp key": "MC = '" + "0123456789abcdef" * 2 + "-us12'",
    "Discord bot token": "DISCORD = 'M" + "TAxMjM0NTY3ODkwMTIzNDU2" + ".Gabcde." + "aBcDeFgHiJkLmNoPqRsTuVwXyZ0" + "'",
    "Telegram bot token": "TELEGRAM = '123456789:" + "AAaBcDeFgHiJkLmNoPqRsTuVwXyZ0123456" + "'",
    "Square OAuth secret": "SQUARE = 'sq0csp-" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789-_aBcDe" + "'",
    "Artifactory token": "ART = 'AKC" + "aBcDeFgHiJkLmNoPqRsT" + "'",
    "npm token in .npmrc form": "//registry.npmjs.org/:_authToken=npm_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
    # Probed a round later, of the same classes (10 of these 12 were sent before tandem's rules gained them).
    "Shopify access token": "SHOPIFY = 'shpat_" + "0123456789abcdef" * 2 + "'",
    "Mailgun API key": "MAILGUN = 'key-" + "0123456789abcdef" * 2 + "'",
    "Square access token": "SQUARE = 'sq0atp-" + "aBcDeFgHiJkLmNoPqRsTuV" + "'",
    "Databricks token": "DATABRICKS = 'dapi" + "0123456789abcdef" * 2 + "'",
    "age secret key": "AGE = 'AGE-SECRET-KEY-1" + "QZ8X2W5R7T9Y3U6I1O4P0A2S" * 2 + "QZ8X2W5R7T" + "'",
    "Linear API key": "LINEAR = 'lin_api_" + "aBcDeFgHiJ" * 4 + "'",
    "Pulumi token": "PULUMI = 'pul-" + "0123456789" * 4 + "'",
    "Doppler token": "DOPPLER = 'dp.st.prd." + "aBcDeFgHiJ" * 4 + "'",
    "Azure AD client secret": "AZURE = 'aB1" + "8Q~" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456" + "'",
    "JSON Web Token": "JWT = 'eyJ" + "hbGciOiJIUzI1NiJ9" + ".eyJ" + "zdWIiOiIxMjM0NTY3ODkwIn0"
    + ".dozjgNryP4J3jVmNHl0w5N'",
    "OpenSSH private key": "-----BEGIN OPENSSH " + "PRIVATE KEY-----",
    "PKCS#8 private key": "-----BEGIN " + "PRIVATE KEY-----",
}

# Credential files by name: the ten the issue found sent, and others of the same kind.
FILE_NAMES = (
    "kubeconfig", ".kube/config", "clusters/prod.kubeconfig", ".vault-token", ".my.cnf", ".htpasswd",
    "rclone.conf", "prod.tfvars", "terraform.tfstate", ".terraformrc", "wp-config.php", ".s3cfg", ".boto",
    ".mylogin.cnf", ".config/gh/hosts.yml", ".m2/settings.xml", "AuthKey_ABC123.p8",
    # Probed a round later (the first two were sent before).
    "client_secret_1234.apps.googleusercontent.com.json", "config/credentials.yml.enc", ".git-credentials",
    "_netrc", ".pgpass", "id_ed25519", "release.keystore", "cert.pfx", ".env.production",
)  # fmt: skip

# Ordinary code that no rule may refuse (a rule that did would stop completions in ordinary files).
ORDINARY = (
    "password = os.environ['PASSWORD']",
    "url = 'https://user:pass@example.com/path'",
    "token = request.headers.get('Authorization')",
    "SECRET_KEY = get_secret('django')",
    "digest = '0123456789abcdef0123456789abcdef'",
    "HOST = '192.168.1.10'",
    "key = 'aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789abcdefgh'",
    "cache_key = 'key-' + hashlib.md5(name).hexdigest()",
    "token = 'header.payload.signature'",
)
