module ark.test/csi-driver

go 1.25.0

require (
	github.com/container-storage-interface/spec v1.12.0
	golang.org/x/sys v0.38.0
	google.golang.org/grpc v1.72.2
	google.golang.org/protobuf v1.36.8
	k8s.io/kubelet v0.35.4
)

require (
	golang.org/x/net v0.47.0 // indirect
	golang.org/x/text v0.31.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20250528174236-200df99c418a // indirect
)
