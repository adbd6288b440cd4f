
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'ark' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'ark'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'ark' {
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('backup', 'backup', [CompletionResultType]::ParameterValue, 'Work with backups')
            [CompletionResult]::new('restore', 'restore', [CompletionResultType]::ParameterValue, 'Work with restores')
            [CompletionResult]::new('backup-location', 'backup-location', [CompletionResultType]::ParameterValue, 'Work with backup storage locations')
            [CompletionResult]::new('install', 'install', [CompletionResultType]::ParameterValue, 'Install ark in the cluster: CRDs, roles, the default location and the server Deployment')
            [CompletionResult]::new('uninstall', 'uninstall', [CompletionResultType]::ParameterValue, 'Remove what `ark install` applied (never the bucket''s data)')
            [CompletionResult]::new('server', 'server', [CompletionResultType]::ParameterValue, 'Run the ark server (the controllers that carry out backups, restores and deletions)')
            [CompletionResult]::new('client', 'client', [CompletionResultType]::ParameterValue, 'Manage ark''s own settings (the default namespace)')
            [CompletionResult]::new('completion', 'completion', [CompletionResultType]::ParameterValue, 'Print a shell completion script')
            [CompletionResult]::new('version', 'version', [CompletionResultType]::ParameterValue, 'Print ark''s version and the cluster''s')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'ark;backup' {
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('create', 'create', [CompletionResultType]::ParameterValue, 'Create a backup')
            [CompletionResult]::new('get', 'get', [CompletionResultType]::ParameterValue, 'List backups')
            [CompletionResult]::new('describe', 'describe', [CompletionResultType]::ParameterValue, 'Show a backup''s details')
            [CompletionResult]::new('logs', 'logs', [CompletionResultType]::ParameterValue, 'Print a backup''s logs')
            [CompletionResult]::new('delete', 'delete', [CompletionResultType]::ParameterValue, 'Delete backups and all their data through DeleteBackupRequests')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'ark;backup;create' {
            [CompletionResult]::new('--include-namespaces', '--include-namespaces', [CompletionResultType]::ParameterName, 'Namespaces to include (comma-separated; `*` for all)')
            [CompletionResult]::new('--exclude-namespaces', '--exclude-namespaces', [CompletionResultType]::ParameterName, 'Namespaces to exclude (comma-separated)')
            [CompletionResult]::new('--include-resources', '--include-resources', [CompletionResultType]::ParameterName, 'Resources to include (comma-separated: `deployments`, `deployments.apps`, `*`)')
            [CompletionResult]::new('--exclude-resources', '--exclude-resources', [CompletionResultType]::ParameterName, 'Resources to exclude (comma-separated)')
            [CompletionResult]::new('--include-cluster-resources', '--include-cluster-resources', [CompletionResultType]::ParameterName, 'Include cluster-scoped resources (default: only when every namespace is included)')
            [CompletionResult]::new('-l', '-l', [CompletionResultType]::ParameterName, 'Only objects matching this label selector')
            [CompletionResult]::new('--selector', '--selector', [CompletionResultType]::ParameterName, 'Only objects matching this label selector')
            [CompletionResult]::new('--ttl', '--ttl', [CompletionResultType]::ParameterName, 'How long to keep the backup (Go duration: 720h, 24h30m)')
            [CompletionResult]::new('--storage-location', '--storage-location', [CompletionResultType]::ParameterName, 'Where to store it (default: the default location)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'With --wait: give up waiting after this long (Go duration: 10m, 1h), exiting non-zero; the operation itself goes on')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('-w', '-w', [CompletionResultType]::ParameterName, 'Wait until it finishes, showing progress; exit non-zero unless it completed without errors')
            [CompletionResult]::new('--wait', '--wait', [CompletionResultType]::ParameterName, 'Wait until it finishes, showing progress; exit non-zero unless it completed without errors')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'ark;backup;get' {
            [CompletionResult]::new('-l', '-l', [CompletionResultType]::ParameterName, 'Only those matching this label selector')
            [CompletionResult]::new('--selector', '--selector', [CompletionResultType]::ParameterName, 'Only those matching this label selector')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('--show-labels', '--show-labels', [CompletionResultType]::ParameterName, 'Add a LABELS column to the table: each one''s labels as `key=value,...`')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'ark;backup;describe' {
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('--details', '--details', [CompletionResultType]::ParameterName, 'Also show the resource list and every warning and error (read from the bucket)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'ark;backup;logs' {
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'ark;backup;delete' {
            [CompletionResult]::new('-l', '-l', [CompletionResultType]::ParameterName, 'Delete the backups matching this label selector')
            [CompletionResult]::new('--selector', '--selector', [CompletionResultType]::ParameterName, 'Delete the backups matching this label selector')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'With --wait: give up waiting after this long (Go duration: 10m, 1h), exiting non-zero; the operation itself goes on')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('--all', '--all', [CompletionResultType]::ParameterName, 'Delete every backup in the namespace')
            [CompletionResult]::new('--confirm', '--confirm', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required when standard input is not a terminal)')
            [CompletionResult]::new('-w', '-w', [CompletionResultType]::ParameterName, 'Wait until it finishes, showing progress; exit non-zero unless it completed without errors')
            [CompletionResult]::new('--wait', '--wait', [CompletionResultType]::ParameterName, 'Wait until it finishes, showing progress; exit non-zero unless it completed without errors')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'ark;backup;help' {
            [CompletionResult]::new('create', 'create', [CompletionResultType]::ParameterValue, 'Create a backup')
            [CompletionResult]::new('get', 'get', [CompletionResultType]::ParameterValue, 'List backups')
            [CompletionResult]::new('describe', 'describe', [CompletionResultType]::ParameterValue, 'Show a backup''s details')
            [CompletionResult]::new('logs', 'logs', [CompletionResultType]::ParameterValue, 'Print a backup''s logs')
            [CompletionResult]::new('delete', 'delete', [CompletionResultType]::ParameterValue, 'Delete backups and all their data through DeleteBackupRequests')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'ark;backup;help;create' {
            break
        }
        'ark;backup;help;get' {
            break
        }
        'ark;backup;help;describe' {
            break
        }
        'ark;backup;help;logs' {
            break
        }
        'ark;backup;help;delete' {
            break
        }
        'ark;backup;help;help' {
            break
        }
        'ark;restore' {
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('create', 'create', [CompletionResultType]::ParameterValue, 'Restore from a backup')
            [CompletionResult]::new('get', 'get', [CompletionResultType]::ParameterValue, 'List restores')
            [CompletionResult]::new('describe', 'describe', [CompletionResultType]::ParameterValue, 'Show a restore''s details')
            [CompletionResult]::new('logs', 'logs', [CompletionResultType]::ParameterValue, 'Print a restore''s logs')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'ark;restore;create' {
            [CompletionResult]::new('--from-backup', '--from-backup', [CompletionResultType]::ParameterName, 'The backup to restore from')
            [CompletionResult]::new('--include-namespaces', '--include-namespaces', [CompletionResultType]::ParameterName, 'Namespaces to include (comma-separated; `*` for all)')
            [CompletionResult]::new('--exclude-namespaces', '--exclude-namespaces', [CompletionResultType]::ParameterName, 'Namespaces to exclude (comma-separated)')
            [CompletionResult]::new('--include-resources', '--include-resources', [CompletionResultType]::ParameterName, 'Resources to include (comma-separated: `deployments`, `deployments.apps`, `*`)')
            [CompletionResult]::new('--exclude-resources', '--exclude-resources', [CompletionResultType]::ParameterName, 'Resources to exclude (comma-separated)')
            [CompletionResult]::new('--include-cluster-resources', '--include-cluster-resources', [CompletionResultType]::ParameterName, 'Include cluster-scoped resources (default: only when every namespace is included)')
            [CompletionResult]::new('-l', '-l', [CompletionResultType]::ParameterName, 'Only objects matching this label selector')
            [CompletionResult]::new('--selector', '--selector', [CompletionResultType]::ParameterName, 'Only objects matching this label selector')
            [CompletionResult]::new('--namespace-mappings', '--namespace-mappings', [CompletionResultType]::ParameterName, 'Restore namespaces under other names: old:new,old2:new2')
            [CompletionResult]::new('--existing-resource-policy', '--existing-resource-policy', [CompletionResultType]::ParameterName, 'What to do with objects that already exist')
            [CompletionResult]::new('--hooks-file', '--hooks-file', [CompletionResultType]::ParameterName, 'Restore hooks (YAML or JSON: the `spec.hooks` of a Restore; `-` reads standard input), checked before anything is created')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'With --wait: give up waiting after this long (Go duration: 10m, 1h), exiting non-zero; the operation itself goes on')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('-w', '-w', [CompletionResultType]::ParameterName, 'Wait until it finishes, showing progress; exit non-zero unless it completed without errors')
            [CompletionResult]::new('--wait', '--wait', [CompletionResultType]::ParameterName, 'Wait until it finishes, showing progress; exit non-zero unless it completed without errors')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'ark;restore;get' {
            [CompletionResult]::new('-l', '-l', [CompletionResultType]::ParameterName, 'Only those matching this label selector')
            [CompletionResult]::new('--selector', '--selector', [CompletionResultType]::ParameterName, 'Only those matching this label selector')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('--show-labels', '--show-labels', [CompletionResultType]::ParameterName, 'Add a LABELS column to the table: each one''s labels as `key=value,...`')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'ark;restore;describe' {
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('--details', '--details', [CompletionResultType]::ParameterName, 'Also show the resource list and every warning and error (read from the bucket)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'ark;restore;logs' {
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'ark;restore;help' {
            [CompletionResult]::new('create', 'create', [CompletionResultType]::ParameterValue, 'Restore from a backup')
            [CompletionResult]::new('get', 'get', [CompletionResultType]::ParameterValue, 'List restores')
            [CompletionResult]::new('describe', 'describe', [CompletionResultType]::ParameterValue, 'Show a restore''s details')
            [CompletionResult]::new('logs', 'logs', [CompletionResultType]::ParameterValue, 'Print a restore''s logs')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'ark;restore;help;create' {
            break
        }
        'ark;restore;help;get' {
            break
        }
        'ark;restore;help;describe' {
            break
        }
        'ark;restore;help;logs' {
            break
        }
        'ark;restore;help;help' {
            break
        }
        'ark;backup-location' {
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('create', 'create', [CompletionResultType]::ParameterValue, 'Create a backup storage location')
            [CompletionResult]::new('get', 'get', [CompletionResultType]::ParameterValue, 'List backup storage locations')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'ark;backup-location;create' {
            [CompletionResult]::new('--provider', '--provider', [CompletionResultType]::ParameterName, 'Object storage provider')
            [CompletionResult]::new('--bucket', '--bucket', [CompletionResultType]::ParameterName, 'Bucket (for `file`: a directory the server can reach)')
            [CompletionResult]::new('--prefix', '--prefix', [CompletionResultType]::ParameterName, 'Folder inside the bucket')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Provider settings: region=us-east-1,s3Url=http://...,s3ForcePathStyle=true')
            [CompletionResult]::new('--credential', '--credential', [CompletionResultType]::ParameterName, 'Credentials from a Secret in the namespace: SECRET=KEY (default: the server''s environment)')
            [CompletionResult]::new('--access-mode', '--access-mode', [CompletionResultType]::ParameterName, 'ReadOnly locations are never written: restores only')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('--default', '--default', [CompletionResultType]::ParameterName, 'Make this the default location')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'ark;backup-location;get' {
            [CompletionResult]::new('-l', '-l', [CompletionResultType]::ParameterName, 'Only those matching this label selector')
            [CompletionResult]::new('--selector', '--selector', [CompletionResultType]::ParameterName, 'Only those matching this label selector')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('--show-labels', '--show-labels', [CompletionResultType]::ParameterName, 'Add a LABELS column to the table: each one''s labels as `key=value,...`')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'ark;backup-location;help' {
            [CompletionResult]::new('create', 'create', [CompletionResultType]::ParameterValue, 'Create a backup storage location')
            [CompletionResult]::new('get', 'get', [CompletionResultType]::ParameterValue, 'List backup storage locations')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'ark;backup-location;help;create' {
            break
        }
        'ark;backup-location;help;get' {
            break
        }
        'ark;backup-location;help;help' {
            break
        }
        'ark;install' {
            [CompletionResult]::new('--provider', '--provider', [CompletionResultType]::ParameterName, 'Object storage provider of the default location')
            [CompletionResult]::new('--bucket', '--bucket', [CompletionResultType]::ParameterName, 'Bucket of the default location (for `file`: a directory on the node)')
            [CompletionResult]::new('--prefix', '--prefix', [CompletionResultType]::ParameterName, 'Folder inside the bucket')
            [CompletionResult]::new('--secret-file', '--secret-file', [CompletionResultType]::ParameterName, 'Credentials file for the provider, stored in the `cloud-credentials` Secret that the location reads (AWS: a credentials file; Azure: KEY=VALUE lines, as Velero''s plugins take)')
            [CompletionResult]::new('--backup-location-config', '--backup-location-config', [CompletionResultType]::ParameterName, 'Settings of the default location: region=us-east-1,s3Url=https://...,s3ForcePathStyle=true')
            [CompletionResult]::new('--image', '--image', [CompletionResultType]::ParameterName, 'The server''s image')
            [CompletionResult]::new('--replicas', '--replicas', [CompletionResultType]::ParameterName, 'Server replicas (one leads, the others wait to take over)')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'With --dry-run: print the objects as a List in this format (`kubectl apply -f -` takes it)')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'With --dry-run: print the objects as a List in this format (`kubectl apply -f -` takes it)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'With --wait: give up waiting after this long (Go duration: 10m, 1h), exiting non-zero; the operation itself goes on')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Apply nothing: print what would be applied (with -o json|yaml, the objects themselves)')
            [CompletionResult]::new('-w', '-w', [CompletionResultType]::ParameterName, 'Wait until it finishes, showing progress; exit non-zero unless it completed without errors')
            [CompletionResult]::new('--wait', '--wait', [CompletionResultType]::ParameterName, 'Wait until it finishes, showing progress; exit non-zero unless it completed without errors')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'ark;uninstall' {
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('--confirm', '--confirm', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required when standard input is not a terminal)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'ark;server' {
            [CompletionResult]::new('--scratch-dir', '--scratch-dir', [CompletionResultType]::ParameterName, 'Where tarballs are assembled and unpacked')
            [CompletionResult]::new('--backup-sync-period', '--backup-sync-period', [CompletionResultType]::ParameterName, 'How often each location''s bucket is synced into Backup objects')
            [CompletionResult]::new('--store-validation-frequency', '--store-validation-frequency', [CompletionResultType]::ParameterName, 'How often each location is checked')
            [CompletionResult]::new('--default-backup-ttl', '--default-backup-ttl', [CompletionResultType]::ParameterName, 'TTL of backups that set none')
            [CompletionResult]::new('--workers', '--workers', [CompletionResultType]::ParameterName, 'Backups and restores run at once')
            [CompletionResult]::new('--id', '--id', [CompletionResultType]::ParameterName, 'This replica''s identity in the leader-election Lease (default: <hostname>-<pid>)')
            [CompletionResult]::new('--deletion-workers', '--deletion-workers', [CompletionResultType]::ParameterName, 'Backup deletions run at once')
            [CompletionResult]::new('--deletion-request-ttl', '--deletion-request-ttl', [CompletionResultType]::ParameterName, 'How long a processed DeleteBackupRequest is kept')
            [CompletionResult]::new('--garbage-collection-frequency', '--garbage-collection-frequency', [CompletionResultType]::ParameterName, 'How often expired backups are looked for')
            [CompletionResult]::new('--restore-hooks-timeout', '--restore-hooks-timeout', [CompletionResultType]::ParameterName, 'How long a restore waits, at most, for the exec hooks of its pods')
            [CompletionResult]::new('--restore-hook-execs-at-once', '--restore-hook-execs-at-once', [CompletionResultType]::ParameterName, 'Exec hook commands one restore runs at once (waiting for a free one never counts against a hook''s execTimeout)')
            [CompletionResult]::new('--metrics-address', '--metrics-address', [CompletionResultType]::ParameterName, 'Serve Prometheus metrics on this address (e.g. 127.0.0.1:8085)')
            [CompletionResult]::new('--velero-answer-timeout', '--velero-answer-timeout', [CompletionResultType]::ParameterName, 'At start-up, how long to wait for a Velero server to answer a ServerStatusRequest before concluding that none runs in the namespace (ark refuses to start beside one)')
            [CompletionResult]::new('--shutdown-grace', '--shutdown-grace', [CompletionResultType]::ParameterName, 'On SIGTERM, how long running backups, restores and deletions may take to finish before the server stops anyway (the next leader fails what is left); keep it below the pod''s termination grace period')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'ark;client' {
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('config', 'config', [CompletionResultType]::ParameterValue, 'Set or print ark''s settings')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'ark;client;config' {
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('set', 'set', [CompletionResultType]::ParameterValue, 'Set settings as KEY=VALUE (KEY= unsets one)')
            [CompletionResult]::new('get', 'get', [CompletionResultType]::ParameterValue, 'Print settings as `key: value` (`<unset>` when not set)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'ark;client;config;set' {
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'ark;client;config;get' {
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'ark;client;config;help' {
            [CompletionResult]::new('set', 'set', [CompletionResultType]::ParameterValue, 'Set settings as KEY=VALUE (KEY= unsets one)')
            [CompletionResult]::new('get', 'get', [CompletionResultType]::ParameterValue, 'Print settings as `key: value` (`<unset>` when not set)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'ark;client;config;help;set' {
            break
        }
        'ark;client;config;help;get' {
            break
        }
        'ark;client;config;help;help' {
            break
        }
        'ark;client;help' {
            [CompletionResult]::new('config', 'config', [CompletionResultType]::ParameterValue, 'Set or print ark''s settings')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'ark;client;help;config' {
            [CompletionResult]::new('set', 'set', [CompletionResultType]::ParameterValue, 'Set settings as KEY=VALUE (KEY= unsets one)')
            [CompletionResult]::new('get', 'get', [CompletionResultType]::ParameterValue, 'Print settings as `key: value` (`<unset>` when not set)')
            break
        }
        'ark;client;help;config;set' {
            break
        }
        'ark;client;help;config;get' {
            break
        }
        'ark;client;help;help' {
            break
        }
        'ark;completion' {
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'ark;version' {
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'How long to wait for the server in the namespace to answer')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('--client-only', '--client-only', [CompletionResultType]::ParameterName, 'Print only the client''s version, without contacting the cluster')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'ark;help' {
            [CompletionResult]::new('backup', 'backup', [CompletionResultType]::ParameterValue, 'Work with backups')
            [CompletionResult]::new('restore', 'restore', [CompletionResultType]::ParameterValue, 'Work with restores')
            [CompletionResult]::new('backup-location', 'backup-location', [CompletionResultType]::ParameterValue, 'Work with backup storage locations')
            [CompletionResult]::new('install', 'install', [CompletionResultType]::ParameterValue, 'Install ark in the cluster: CRDs, roles, the default location and the server Deployment')
            [CompletionResult]::new('uninstall', 'uninstall', [CompletionResultType]::ParameterValue, 'Remove what `ark install` applied (never the bucket''s data)')
            [CompletionResult]::new('server', 'server', [CompletionResultType]::ParameterValue, 'Run the ark server (the controllers that carry out backups, restores and deletions)')
            [CompletionResult]::new('client', 'client', [CompletionResultType]::ParameterValue, 'Manage ark''s own settings (the default namespace)')
            [CompletionResult]::new('completion', 'completion', [CompletionResultType]::ParameterValue, 'Print a shell completion script')
            [CompletionResult]::new('version', 'version', [CompletionResultType]::ParameterValue, 'Print ark''s version and the cluster''s')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'ark;help;backup' {
            [CompletionResult]::new('create', 'create', [CompletionResultType]::ParameterValue, 'Create a backup')
            [CompletionResult]::new('get', 'get', [CompletionResultType]::ParameterValue, 'List backups')
            [CompletionResult]::new('describe', 'describe', [CompletionResultType]::ParameterValue, 'Show a backup''s details')
            [CompletionResult]::new('logs', 'logs', [CompletionResultType]::ParameterValue, 'Print a backup''s logs')
            [CompletionResult]::new('delete', 'delete', [CompletionResultType]::ParameterValue, 'Delete backups and all their data through DeleteBackupRequests')
            break
        }
        'ark;help;backup;create' {
            break
        }
        'ark;help;backup;get' {
            break
        }
        'ark;help;backup;describe' {
            break
        }
        'ark;help;backup;logs' {
            break
        }
        'ark;help;backup;delete' {
            break
        }
        'ark;help;restore' {
            [CompletionResult]::new('create', 'create', [CompletionResultType]::ParameterValue, 'Restore from a backup')
            [CompletionResult]::new('get', 'get', [CompletionResultType]::ParameterValue, 'List restores')
            [CompletionResult]::new('describe', 'describe', [CompletionResultType]::ParameterValue, 'Show a restore''s details')
            [CompletionResult]::new('logs', 'logs', [CompletionResultType]::ParameterValue, 'Print a restore''s logs')
            break
        }
        'ark;help;restore;create' {
            break
        }
        'ark;help;restore;get' {
            break
        }
        'ark;help;restore;describe' {
            break
        }
        'ark;help;restore;logs' {
            break
        }
        'ark;help;backup-location' {
            [CompletionResult]::new('create', 'create', [CompletionResultType]::ParameterValue, 'Create a backup storage location')
            [CompletionResult]::new('get', 'get', [CompletionResultType]::ParameterValue, 'List backup storage locations')
            break
        }
        'ark;help;backup-location;create' {
            break
        }
        'ark;help;backup-location;get' {
            break
        }
        'ark;help;install' {
            break
        }
        'ark;help;uninstall' {
            break
        }
        'ark;help;server' {
            break
        }
        'ark;help;client' {
            [CompletionResult]::new('config', 'config', [CompletionResultType]::ParameterValue, 'Set or print ark''s settings')
            break
        }
        'ark;help;client;config' {
            [CompletionResult]::new('set', 'set', [CompletionResultType]::ParameterValue, 'Set settings as KEY=VALUE (KEY= unsets one)')
            [CompletionResult]::new('get', 'get', [CompletionResultType]::ParameterValue, 'Print settings as `key: value` (`<unset>` when not set)')
            break
        }
        'ark;help;client;config;set' {
            break
        }
        'ark;help;client;config;get' {
            break
        }
        'ark;help;completion' {
            break
        }
        'ark;help;version' {
            break
        }
        'ark;help;help' {
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
