package grantwire

import "net"

func isIP(host string) bool { return net.ParseIP(host) != nil }
