// A CSI driver for ark's test ground, not part of ark: volumes are directories on this host (block
// volumes are files, attached to loop devices), snapshots are copies of them, and pods on the real
// node get them bind-mounted. It registers itself with the kubelet (what node-driver-registrar
// would do, which the Go module proxy does not serve). See docs/test-ground.md, "CSI".
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	registration "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

const (
	driverName = "hostpath.csi.ark.test"
	version    = "1.0.0"
	// A unix socket's path must fit in sockaddr_un's 108 bytes, NUL included.
	maxSocketPath = 107
)

func main() {
	endpoint := flag.String("endpoint", "", "the CSI socket: a path or unix:///path")
	stateDir := flag.String("state", "", "where volumes and snapshots are kept")
	nodeID := flag.String("node-id", "127.0.0.1", "the node id NodeGetInfo reports (the kubelet's node name)")
	registrationDir := flag.String("registration-dir", "",
		"the kubelet's plugins_registry directory, to register with it; none: do not register")
	flag.Parse()
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	if *endpoint == "" || *stateDir == "" {
		log.Fatal("--endpoint and --state are required")
	}
	socket := strings.TrimPrefix(*endpoint, "unix://")

	d, err := newDriver(*stateDir, *nodeID)
	if err != nil {
		log.Fatal(err)
	}
	csiListener, err := listen(socket)
	if err != nil {
		log.Fatal(err)
	}
	csiServer := grpc.NewServer(grpc.UnaryInterceptor(logCall))
	csi.RegisterIdentityServer(csiServer, d)
	csi.RegisterControllerServer(csiServer, d)
	csi.RegisterNodeServer(csiServer, d)
	servers := []*grpc.Server{csiServer}
	sockets := []string{socket}
	go serve(csiServer, csiListener)
	log.Printf("%s %s serving on %s, state in %s, node %s", driverName, version, socket, *stateDir, *nodeID)

	if *registrationDir != "" {
		regSocket := filepath.Join(*registrationDir, driverName+"-reg.sock")
		regListener, err := listen(regSocket)
		if err != nil {
			log.Fatal(err)
		}
		regServer := grpc.NewServer(grpc.UnaryInterceptor(logCall))
		registration.RegisterRegistrationServer(regServer, &registrar{endpoint: socket})
		// The registration socket goes first at exit, so that the kubelet forgets the driver
		// before its endpoint disappears.
		servers = append([]*grpc.Server{regServer}, servers...)
		sockets = append([]string{regSocket}, sockets...)
		go serve(regServer, regListener)
		log.Printf("registering with the kubelet through %s", regSocket)
	}

	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	log.Printf("stopping on %v", <-signals)
	for i, server := range servers {
		server.Stop()
		_ = os.Remove(sockets[i])
	}
}

// listen makes the directory of a unix socket and listens there, replacing a stale socket.
func listen(path string) (net.Listener, error) {
	if len(path) > maxSocketPath {
		return nil, fmt.Errorf("socket path %s is %d bytes, over the %d a unix socket allows", path, len(path), maxSocketPath)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return net.Listen("unix", path)
}

func serve(server *grpc.Server, listener net.Listener) {
	if err := server.Serve(listener); err != nil {
		log.Fatal(err)
	}
}

// logCall logs every call on one line: the method, the request and what was answered.
func logCall(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	start := time.Now()
	resp, err := handler(ctx, req)
	method := info.FullMethod[strings.LastIndex(info.FullMethod, "/")+1:]
	outcome := fmt.Sprintf("ok %v", resp)
	if err != nil {
		outcome = fmt.Sprintf("error %s: %s", status.Code(err), status.Convert(err).Message())
	}
	log.Print(oneLine(fmt.Sprintf("%s {%v} -> %s (%s)", method, req, outcome, time.Since(start).Round(time.Microsecond))))
	return resp, err
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// registrar answers the kubelet's plugin watcher, which finds its socket in plugins_registry.
type registrar struct {
	registration.UnimplementedRegistrationServer
	endpoint string
}

func (r *registrar) GetInfo(context.Context, *registration.InfoRequest) (*registration.PluginInfo, error) {
	return &registration.PluginInfo{
		Type:              registration.CSIPlugin,
		Name:              driverName,
		Endpoint:          r.endpoint,
		SupportedVersions: []string{version},
	}, nil
}

func (r *registrar) NotifyRegistrationStatus(_ context.Context, s *registration.RegistrationStatus) (*registration.RegistrationStatusResponse, error) {
	if s.PluginRegistered {
		log.Printf("the kubelet registered %s", driverName)
	} else {
		log.Printf("the kubelet refused %s: %s", driverName, s.Error)
	}
	return &registration.RegistrationStatusResponse{}, nil
}
