//! `--split-cores`: the FakeCluster on one CPU, every client's worker on the others.
//!
//! The real-timing profile models a broker's timing, not its CPU: on one machine the fake's
//! threads and the client's still take turns on the same cores, which brokers and clients on
//! machines of their own do not. On 2 cores the split gives each side one, so a client's
//! multi-thread runtime (tokio counts the CPUs it may run on) then has one worker.

/// Which CPUs the cluster and the clients run on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Split {
    pub cluster: Vec<usize>,
    pub clients: Vec<usize>,
}

impl Split {
    /// The first of `allowed` for the cluster, the rest for the clients; an error with fewer
    /// than two.
    pub fn of(allowed: &[usize]) -> Result<Split, String> {
        match allowed {
            [first, rest @ ..] if !rest.is_empty() => Ok(Split { cluster: vec![*first], clients: rest.to_vec() }),
            _ => Err(format!(
                "--split-cores needs at least 2 CPUs to run on; this process may use {}",
                if allowed.is_empty() { "none it can read".to_string() } else { format!("{allowed:?}") }
            )),
        }
    }

    /// From the CPUs this process may run on.
    pub fn here() -> Result<Split, String> {
        Split::of(&allowed()?)
    }
}

/// The CPUs this process may run on (`sched_getaffinity`).
fn allowed() -> Result<Vec<usize>, String> {
    // SAFETY: a zeroed cpu_set_t is an empty set; sched_getaffinity writes at most its size
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Err(format!("sched_getaffinity: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: CPU_ISSET reads the set within CPU_SETSIZE
    Ok((0..libc::CPU_SETSIZE as usize).filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) }).collect())
}

/// Restricts the calling thread (in a child between fork and exec: the process to be) to
/// `cpus`. Only a system call, so fit for `pre_exec`.
pub fn pin(cpus: &[usize]) -> std::io::Result<()> {
    // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET writes within CPU_SETSIZE (checked)
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
        }
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Makes `command` run on `cpus`, when given.
pub fn pin_command(command: &mut std::process::Command, cpus: Option<&[usize]>) {
    if let Some(cpus) = cpus {
        let cpus = cpus.to_vec();
        use std::os::unix::process::CommandExt;
        // SAFETY: the closure makes one system call and allocates nothing
        unsafe { command.pre_exec(move || pin(&cpus)) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_cpu_for_the_cluster_the_rest_for_the_clients() {
        assert_eq!(Split::of(&[0, 1]), Ok(Split { cluster: vec![0], clients: vec![1] }));
        assert_eq!(Split::of(&[2, 5, 7]), Ok(Split { cluster: vec![2], clients: vec![5, 7] }));
        assert!(Split::of(&[3]).unwrap_err().contains("at least 2 CPUs"));
        assert!(Split::of(&[]).is_err());
    }

    #[test]
    fn a_pinned_child_runs_on_the_cpus_it_was_given() {
        let here = allowed().unwrap();
        let cpu = *here.last().unwrap();
        let mut command = std::process::Command::new("sh");
        command.args(["-c", "grep Cpus_allowed_list /proc/self/status"]);
        pin_command(&mut command, Some(&[cpu]));
        let out = command.output().unwrap();
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(text.split_whitespace().nth(1), Some(cpu.to_string().as_str()), "{text}");
    }
}
