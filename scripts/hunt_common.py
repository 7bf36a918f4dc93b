"""What the hunt scripts share: running tunedb and reading back the
statuses of every record a session stored."""
import subprocess


def tunedb(binary, args, timeout=900):
    return subprocess.run([binary] + args, capture_output=True, text=True, timeout=timeout)


def record_statuses(binary, db):
    """{status: count} over every record of every workload in `db`. By
    workload hash: `db stats` shortens long workload names."""
    statuses = {}
    for line in tunedb(binary, ['db', 'stats', '--db', db]).stdout.splitlines():
        fields = line.split()
        if len(fields) < 4 or not fields[0].isdigit():
            continue
        records = tunedb(binary, ['db', 'records', '--db', db, '--hash', fields[0], '--limit', '100000'])
        for r in records.stdout.splitlines()[1:]:
            if len(r.split()) > 1:
                statuses[r.split()[1]] = statuses.get(r.split()[1], 0) + 1
    return statuses


def wrong(statuses):
    """The statuses a hunt reports: anything but `ok` and `timeout` (a
    loaded machine times out now and then), or no record at all (a session
    that stored nothing checked nothing)."""
    bad = {s: n for s, n in statuses.items() if s not in ('ok', 'timeout')}
    return bad if statuses else {'no records found': 0}


def sanitizer_report(text):
    """The first line of a sanitizer's report in a process's output, or ''.
    UndefinedBehaviorSanitizer reports and goes on, so the exit code of a
    sanitizer build (--tunedb build-asan/tunedb) does not show it."""
    for line in text.splitlines():
        if 'runtime error:' in line or 'Sanitizer' in line:
            return line.strip()
    return ''
