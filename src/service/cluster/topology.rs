//! What a cluster node says about the cluster, parsed: `CLUSTER NODES` gives every node's id,
//! address, role and hash slots; `CLUSTER INFO` gives the state. Pure functions, so the parsing
//! is tested on text copied from a real server.

/// One line of `CLUSTER NODES`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeLine {
    pub id: String,
    /// The address clients use (`ip:port` before `@bus`).
    pub host: String,
    pub port: u16,
    pub bus_port: Option<u16>,
    pub master: bool,
    /// This line is the node that answered (`myself`).
    pub myself: bool,
    /// Failing or without an address: not a node to send commands to.
    pub failing: bool,
    /// Slot ranges it owns (inclusive); migration markers (`[5-<-id]`) are left out.
    pub slots: Vec<(u16, u16)>,
    /// A slot of it is being imported or migrated (`[5-<-id]`, `[5->-id]`).
    pub moving: bool,
}

impl NodeLine {
    pub fn slot_count(&self) -> u32 {
        self.slots.iter().map(|(a, b)| (*b - *a) as u32 + 1).sum()
    }

    pub fn owns(&self, slot: u16) -> bool {
        self.slots.iter().any(|(a, b)| (*a..=*b).contains(&slot))
    }
}

/// Every node of a `CLUSTER NODES` reply.
pub fn parse_nodes(text: &str) -> Vec<NodeLine> {
    text.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<NodeLine> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    if fields.len() < 8 {
        return None;
    }
    // `127.0.0.1:7001@17001` or `127.0.0.1:7001@17001,hostname`.
    let addr = fields[1].split(',').next()?;
    let (hostport, bus) = match addr.split_once('@') {
        Some((hp, bus)) => (hp, bus.parse().ok()),
        None => (addr, None),
    };
    let (host, port) = hostport.rsplit_once(':')?;
    let flags: Vec<&str> = fields[2].split(',').collect();
    let moving = fields[8..].iter().any(|s| s.starts_with('['));
    let slots = fields[8..]
        .iter()
        .filter(|s| !s.starts_with('['))
        .filter_map(|s| match s.split_once('-') {
            Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)),
            None => s.parse().ok().map(|x| (x, x)),
        })
        .collect();
    Some(NodeLine {
        id: fields[0].to_string(),
        host: host.to_string(),
        port: port.parse().ok()?,
        bus_port: bus,
        master: flags.contains(&"master"),
        myself: flags.contains(&"myself"),
        failing: flags.iter().any(|f| matches!(*f, "fail" | "fail?" | "noaddr" | "handshake")),
        slots,
        moving,
    })
}

/// A field of `CLUSTER INFO` (or any `INFO` section): `cluster_state` → `ok`.
pub fn info_field<'a>(info: &'a str, key: &str) -> Option<&'a str> {
    info.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix(':')).map(str::trim)
}

#[cfg(test)]
mod tests {
    use super::*;

    // From Redis 7.0.15: three masters made with ADDSLOTSRANGE + MEET, slot 842 migrating.
    const NODES: &str = "\
7c4b5eca1b8f8d0c1c39dcf72c599c40654dd649 127.0.0.1:17002@27002 master - 0 1796001497565 2 connected 5461-10922
4124d5b2c41ba2c52d78387ea87418fb9b29c376 127.0.0.1:17001@27001 myself,master - 0 0 1 connected 0-5460 [842->-7c4b5eca1b8f8d0c1c39dcf72c599c40654dd649]
80ebfb641b677b515aeb41a3dcc1476fe7dc846c 127.0.0.1:17003@27003,node-c master - 0 1796001496551 3 connected 10923-16383 16000
";

    #[test]
    fn masters_addresses_and_slots() {
        let nodes = parse_nodes(NODES);
        assert_eq!(nodes.len(), 3);
        let a = &nodes[1];
        assert_eq!((a.host.as_str(), a.port, a.bus_port), ("127.0.0.1", 17001, Some(27001)));
        assert!(a.master && a.myself && !a.failing && a.moving && !nodes[0].moving);
        assert_eq!(a.slots, [(0, 5460)]);
        assert_eq!(a.slot_count(), 5461);
        assert!(a.owns(842) && !a.owns(5461));
        assert_eq!(nodes[2].slots, [(10923, 16383), (16000, 16000)]);
        assert_eq!(nodes[2].port, 17003);
    }

    #[test]
    fn failing_nodes_and_fields() {
        let line = "abc 127.0.0.1:7000@17000 master,fail - 0 0 1 disconnected";
        assert!(parse_nodes(line)[0].failing);
        assert_eq!(info_field("cluster_state:ok\r\ncluster_slots_ok:16384\r\n", "cluster_state"), Some("ok"));
        assert_eq!(info_field("cluster_state:fail\r\n", "cluster_known_nodes"), None);
    }
}
