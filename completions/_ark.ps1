
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
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('backup', 'backup', [CompletionResultType]::ParameterValue, 'Work with backups')
            [CompletionResult]::new('restore', 'restore', [CompletionResultType]::ParameterValue, 'Work with restores')
            [CompletionResult]::new('backup-location', 'backup-location', [CompletionResultType]::ParameterValue, 'Work with backup storage locations')
            [CompletionResult]::new('server', 'server', [CompletionResultType]::ParameterValue, 'Run the ark server (the controllers that carry out backups, restores and deletions)')
            [CompletionResult]::new('completion', 'completion', [CompletionResultType]::ParameterValue, 'Print a shell completion script')
            [CompletionResult]::new('version', 'version', [CompletionResultType]::ParameterValue, 'Print ark''s version and the cluster''s')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'ark;backup' {
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in')
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
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
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
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'ark;backup;describe' {
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'ark;backup;logs' {
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'ark;backup;delete' {
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
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
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in')
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
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'ark;restore;get' {
            [CompletionResult]::new('-l', '-l', [CompletionResultType]::ParameterName, 'Only those matching this label selector')
            [CompletionResult]::new('--selector', '--selector', [CompletionResultType]::ParameterName, 'Only those matching this label selector')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'ark;restore;describe' {
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'ark;restore;logs' {
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in')
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
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in')
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
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
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
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
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
        'ark;server' {
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'ark;completion' {
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'ark;version' {
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace ark''s objects live in')
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
            [CompletionResult]::new('server', 'server', [CompletionResultType]::ParameterValue, 'Run the ark server (the controllers that carry out backups, restores and deletions)')
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
        'ark;help;server' {
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
