from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0015_newest_sessions_indexes"),
    ]

    operations = [
        migrations.CreateModel(
            name="ImportStatus",
            fields=[
                ("name", models.CharField(max_length=32, primary_key=True, serialize=False)),
                (
                    "phase",
                    models.CharField(
                        choices=[
                            ("records", "records"),
                            ("search", "search"),
                            ("usage", "usage"),
                            ("idle", "idle"),
                        ],
                        default="idle",
                        max_length=16,
                    ),
                ),
                ("started_at", models.DateTimeField(blank=True, null=True)),
                ("finished_at", models.DateTimeField(blank=True, null=True)),
                ("files_total", models.PositiveIntegerField(default=0)),
                ("files_done", models.PositiveIntegerField(default=0)),
                ("bytes_total", models.BigIntegerField(default=0)),
                ("bytes_done", models.BigIntegerField(default=0)),
                ("catch_up_total", models.PositiveIntegerField(default=0)),
                ("catch_up_done", models.PositiveIntegerField(default=0)),
                ("updated_at", models.DateTimeField(auto_now=True)),
            ],
        ),
    ]
