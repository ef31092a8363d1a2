//! The command line: `Args`, its defaults and `parse`.

use std::path::PathBuf;

use cuda_prover_bellperson::circuits::Kind;

pub(crate) struct Args {
    pub(crate) logs: Vec<u32>,
    pub(crate) circuits: Vec<Kind>,
    pub(crate) backends: Vec<String>,
    pub(crate) partitions: usize,
    pub(crate) throughput_backends: Vec<String>,
    pub(crate) synthesis_threads: usize,
    pub(crate) workers_per_device: usize,
    pub(crate) cpu_repeats: usize,
    pub(crate) repeats: usize,
    pub(crate) json: Option<PathBuf>,
    pub(crate) params_dir: PathBuf,
    pub(crate) device_memory_limit: Option<String>,
    pub(crate) stream_share: usize,
}

pub(crate) fn parse() -> Args {
    let mut a = Args {
        logs: vec![16, 18, 20],
        circuits: vec![Kind::Chain, Kind::Bits],
        backends: vec!["host".into(), "bellperson".into()],
        partitions: 16,
        throughput_backends: vec!["cuda".into(), "host".into()],
        synthesis_threads: 0,
        workers_per_device: 2,
        cpu_repeats: 1,
        repeats: 2,
        json: None,
        params_dir: PathBuf::from("params-cache"),
        device_memory_limit: None,
        stream_share: 4,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || it.next().unwrap_or_else(|| panic!("{k} needs a value"));
        match k.as_str() {
            "--logs" => a.logs = v().split(',').map(|x| x.parse().unwrap()).collect(),
            "--circuits" => a.circuits = v().split(',').map(|x| x.parse().unwrap()).collect(),
            "--backends" => a.backends = v().split(',').map(String::from).collect(),
            "--partitions" => a.partitions = v().parse().unwrap(),
            "--synthesis-threads" => a.synthesis_threads = v().parse().unwrap(),
            "--throughput-backends" => {
                a.throughput_backends = v().split(',').map(String::from).collect()
            }
            "--workers-per-device" => a.workers_per_device = v().parse().unwrap(),
            "--cpu-repeats" => a.cpu_repeats = v().parse().unwrap(),
            "--repeats" => a.repeats = v().parse().unwrap(),
            "--json" => a.json = Some(PathBuf::from(v())),
            "--params-dir" => a.params_dir = PathBuf::from(v()),
            "--device-memory-limit" => a.device_memory_limit = Some(v()),
            "--stream-share" => a.stream_share = v().parse().unwrap(),
            "--bench" => {}
            other => panic!("unknown argument {other}"),
        }
    }
    a
}
