# bash completion for anet(1), the ANet node CLI. Installed as
# /usr/share/bash-completion/completions/anet. Keep in step with cmd/anet: the packaging
# test fails when a command or flag of `anet --help` is missing here.

_anet_config_keys="listen keys_file log_level auto_reply.backend auto_reply.agent
auto_reply.trusted auto_reply.untrusted auto_reply.model auto_reply.api_base auto_reply.agent_runtime
auto_reply.api_timeout_seconds auto_reply.work_dir auto_reply.work_retention
auto_reply.egress_allow auto_reply.sandbox.runs_per_day
auto_reply.sandbox.runs_per_peer_per_day auto_reply.sandbox.spend_per_day
auto_reply.sandbox.spend_per_peer_per_day auto_reply.sandbox.memory_max
auto_reply.sandbox.tasks_max auto_reply.sandbox.disk_max auto_reply.sandbox.isolation
auto_reply.sandbox.vm_accel intake.stranger_pending_max intake.strangers_pending_max intake.disk_free_min
dashboard.listen dashboard.metrics_token_file"

_anet_autoreply_keys="backend agent trusted untrusted model api_base agent_runtime api_timeout_seconds
work_dir work_retention sandbox.runs_per_day sandbox.runs_per_peer_per_day
sandbox.spend_per_day sandbox.spend_per_peer_per_day sandbox.memory_max sandbox.tasks_max sandbox.disk_max
sandbox.isolation sandbox.vm_accel"

# _anet_config_values prints the allowed values of an enumerated key.
_anet_config_values() {
    case $1 in
    log_level) echo "debug info warn error" ;;
    auto_reply.backend | backend) echo "exec openai" ;;
    auto_reply.agent | agent) echo "claude codex opencode hermes openclaw cursor" ;;
    auto_reply.trusted | trusted) echo "direct sandbox off" ;;
    auto_reply.untrusted | untrusted) echo "sandbox off" ;;
    auto_reply.sandbox.isolation | sandbox.isolation) echo "bwrap vm" ;;
    auto_reply.sandbox.vm_accel | sandbox.vm_accel) echo "kvm kvm_or_tcg" ;;
    esac
}

_anet() {
    local cur prev words cword
    if declare -F _init_completion >/dev/null; then
        _init_completion || return
    else
        # Without the bash-completion package: plain words, no redirection handling.
        cur=${COMP_WORDS[COMP_CWORD]}
        prev=${COMP_WORDS[COMP_CWORD-1]}
        words=("${COMP_WORDS[@]}")
        cword=$COMP_CWORD
    fi

    # Find the command and subcommand, skipping global options and their values.
    local i cmd="" sub="" args=()
    for ((i = 1; i < cword; i++)); do
        case ${words[i]} in
        --config) ((i++)); continue ;;
        -*) continue ;;
        esac
        if [[ -z $cmd ]]; then
            cmd=${words[i]}
        elif [[ -z $sub && $cmd =~ ^(evidence|config|peer|trust|autoreply)$ ]]; then
            sub=${words[i]}
        else
            args+=("${words[i]}")
        fi
    done

    case $prev in
    --config | --out)
        if declare -F _filedir >/dev/null; then
            _filedir
        else
            COMPREPLY=($(compgen -f -- "$cur"))
        fi
        return
        ;;
    --state)
        COMPREPLY=($(compgen -W "new answered refused" -- "$cur"))
        return
        ;;
    --since | --kind | --peer | --limit | --to | --egress-allow)
        return
        ;;
    esac

    local opts=""
    case $cmd in
    "")
        opts="status doctor evidence config reload dashboard peer trust send inbox show reply autoreply --config --help -h --version -v"
        ;;
    status | reload | dashboard)
        opts="--json --help -h"
        ;;
    doctor)
        opts="--json --apparmor-profile --prove --help -h"
        ;;
    evidence)
        case $sub in
        "") opts="verify show export note --help -h" ;;
        verify) opts="--json --help -h" ;;
        show) opts="--json --since --kind --peer --limit --help -h" ;;
        export) opts="--jsonl --out --help -h" ;;
        note) opts="--help -h" ;;
        esac
        ;;
    peer | trust)
        case $sub in
        "") opts="add remove list --help -h" ;;
        add | remove) opts="--help -h" ;;
        list) opts="--json --help -h" ;;
        esac
        ;;
    send)
        opts="--to --json --help -h"
        ;;
    inbox)
        opts="--json --state --help -h"
        ;;
    show)
        opts="--json --peer --help -h"
        ;;
    reply)
        opts="--peer --help -h"
        ;;
    config)
        case $sub in
        "") opts="show get set --help -h" ;;
        show) opts="--help -h" ;;
        get)
            if ((${#args[@]} == 0)); then
                opts="$_anet_config_keys"
            fi
            opts+=" --help -h"
            ;;
        set)
            if ((${#args[@]} == 0)); then
                opts="$_anet_config_keys"
            elif ((${#args[@]} == 1)); then
                opts=$(_anet_config_values "${args[0]}")
            fi
            opts+=" --yes --help -h"
            ;;
        esac
        ;;
    autoreply)
        case $sub in
        "") opts="test show set --help -h" ;;
        test) opts="--json --help -h" ;;
        show) opts="--help -h" ;;
        set)
            if ((${#args[@]} == 0)); then
                opts="$_anet_autoreply_keys"
            elif ((${#args[@]} == 1)); then
                opts=$(_anet_config_values "${args[0]}")
            fi
            opts+=" --egress-allow --yes --help -h"
            ;;
        esac
        ;;
    esac
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
}
complete -F _anet anet
