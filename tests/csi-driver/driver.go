package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Capacity of a volume whose request names none.
const defaultCapacity = 1 << 30

// The VolumeSnapshotClass parameter that delays a snapshot's readiness (a Go duration, or "never").
const readyAfterParameter = "readyAfter"

// IDs are made here from names: anything else a caller sends is no volume or snapshot of ours
// (and never reaches a path).
var validID = regexp.MustCompile(`^(vol|snap)-[0-9a-f]{24}$`)

// volume is the metadata kept beside a volume's data, volumes/<id>.json. The data of a mounted
// volume is the directory volumes/<id>; of a block volume, the file volumes/<id> of its capacity,
// which a loop device gives pods as a block device.
type volume struct {
	ID             string `json:"id"`
	Name           string `json:"name"`
	CapacityBytes  int64  `json:"capacityBytes"`
	SourceSnapshot string `json:"sourceSnapshot,omitempty"`
	Block          bool   `json:"block,omitempty"`
}

// snapshot is the metadata kept beside a snapshot's copy, snapshots/<id>.json.
type snapshot struct {
	ID           string    `json:"id"`
	Name         string    `json:"name"`
	SourceVolume string    `json:"sourceVolume"`
	SizeBytes    int64     `json:"sizeBytes"`
	CreatedAt    time.Time `json:"createdAt"`
	// "" (ready at once), a Go duration after CreatedAt, or "never".
	ReadyAfter string `json:"readyAfter,omitempty"`
	// A copy of a block volume's file, restored into block volumes only.
	Block bool `json:"block,omitempty"`
}

func (s *snapshot) ready(now time.Time) bool {
	switch s.ReadyAfter {
	case "":
		return true
	case "never":
		return false
	}
	delay, err := time.ParseDuration(s.ReadyAfter)
	return err == nil && !now.Before(s.CreatedAt.Add(delay))
}

func (s *snapshot) csi() *csi.Snapshot {
	return &csi.Snapshot{
		SnapshotId:     s.ID,
		SourceVolumeId: s.SourceVolume,
		SizeBytes:      s.SizeBytes,
		CreationTime:   timestamppb.New(s.CreatedAt),
		ReadyToUse:     s.ready(time.Now()),
	}
}

type driver struct {
	csi.UnimplementedIdentityServer
	csi.UnimplementedControllerServer
	csi.UnimplementedNodeServer
	volumes, snapshots string
	nodeID             string
	// One controller call at a time (the provisioner and the snapshotter call at once), and one
	// node call at a time: a snapshot's copy does not hold up the kubelet's mounts.
	controller, node sync.Mutex
}

func newDriver(state, nodeID string) (*driver, error) {
	d := &driver{
		volumes:   filepath.Join(state, "volumes"),
		snapshots: filepath.Join(state, "snapshots"),
		nodeID:    nodeID,
	}
	for _, dir := range []string{d.volumes, d.snapshots} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
	}
	return d, nil
}

func idOf(prefix, name string) string {
	sum := sha256.Sum256([]byte(name))
	return prefix + "-" + hex.EncodeToString(sum[:12])
}

// readJSON reads metadata; ok is false when there is none.
func readJSON(path string, into any) (ok bool, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, json.Unmarshal(data, into)
}

// writeJSON writes metadata whole or not at all.
func writeJSON(path string, value any) error {
	data, err := json.Marshal(value)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path+".tmp", data, 0o644); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

func (d *driver) volume(id string) (*volume, error) {
	if !validID.MatchString(id) {
		return nil, nil
	}
	var v volume
	ok, err := readJSON(filepath.Join(d.volumes, id+".json"), &v)
	if !ok || err != nil {
		return nil, err
	}
	return &v, nil
}

func (d *driver) snapshot(id string) (*snapshot, error) {
	if !validID.MatchString(id) {
		return nil, nil
	}
	var s snapshot
	ok, err := readJSON(filepath.Join(d.snapshots, id+".json"), &s)
	if !ok || err != nil {
		return nil, err
	}
	return &s, nil
}

// copyTree copies a directory as `cp -a` does (modes, owners, times, symlinks, hard links): a
// database's data directory must come back as it was. It copies into a temporary name and
// renames, so that a copy cut short is never taken for a whole one. Whatever is at `to` goes: the
// callers copy only where no metadata says a volume or snapshot is, so it is such a leftover.
func copyTree(from, to string) error {
	partial := to + ".partial"
	for _, leftover := range []string{partial, to} {
		if err := os.RemoveAll(leftover); err != nil {
			return err
		}
	}
	if out, err := exec.Command("cp", "-a", "--", from, partial).CombinedOutput(); err != nil {
		_ = os.RemoveAll(partial)
		return fmt.Errorf("cp -a %s %s: %v: %s", from, partial, err, strings.TrimSpace(string(out)))
	}
	return os.Rename(partial, to)
}

func internal(err error) error {
	return status.Error(codes.Internal, err.Error())
}

// Identity

func (d *driver) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: driverName, VendorVersion: version}, nil
}

func (d *driver) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	return &csi.GetPluginCapabilitiesResponse{Capabilities: []*csi.PluginCapability{{
		Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{
			Type: csi.PluginCapability_Service_CONTROLLER_SERVICE,
		}},
	}}}, nil
}

func (d *driver) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return &csi.ProbeResponse{}, nil
}

// Controller

func (d *driver) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	var capabilities []*csi.ControllerServiceCapability
	for _, c := range []csi.ControllerServiceCapability_RPC_Type{
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME,
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT,
		csi.ControllerServiceCapability_RPC_LIST_SNAPSHOTS,
	} {
		capabilities = append(capabilities, &csi.ControllerServiceCapability{
			Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: c}},
		})
	}
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: capabilities}, nil
}

// checkCapabilities accepts mounted volumes or block ones, not both at once: block is whether
// they are block ones.
func checkCapabilities(capabilities []*csi.VolumeCapability) (block bool, err error) {
	if len(capabilities) == 0 {
		return false, status.Error(codes.InvalidArgument, "volume capabilities are required")
	}
	mounted := 0
	for _, c := range capabilities {
		switch {
		case c.GetMount() != nil:
			mounted++
		case c.GetBlock() == nil:
			return false, status.Error(codes.InvalidArgument, "a capability is neither mounted nor block")
		}
	}
	if mounted != 0 && mounted != len(capabilities) {
		return false, status.Error(codes.InvalidArgument, "a volume is mounted or a block device, not both")
	}
	return mounted == 0, nil
}

// checkKind refuses a volume of the other kind than the capabilities ask.
func (v *volume) checkKind(block bool) error {
	switch {
	case v.Block && !block:
		return status.Errorf(codes.InvalidArgument, "volume %s is a block volume, not a mounted one", v.ID)
	case !v.Block && block:
		return status.Errorf(codes.InvalidArgument, "volume %s is a mounted volume, not a block one", v.ID)
	}
	return nil
}

func (v *volume) csi() *csi.Volume {
	out := &csi.Volume{VolumeId: v.ID, CapacityBytes: v.CapacityBytes}
	if v.SourceSnapshot != "" {
		out.ContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
			Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: v.SourceSnapshot},
		}}
	}
	return out
}

func (d *driver) CreateVolume(_ context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	if req.Name == "" {
		return nil, status.Error(codes.InvalidArgument, "a name is required")
	}
	block, err := checkCapabilities(req.VolumeCapabilities)
	if err != nil {
		return nil, err
	}
	if req.VolumeContentSource.GetVolume() != nil {
		return nil, status.Error(codes.InvalidArgument, "cloning a volume is not supported")
	}
	required, limit := req.CapacityRange.GetRequiredBytes(), req.CapacityRange.GetLimitBytes()
	if limit > 0 && required > limit {
		return nil, status.Errorf(codes.InvalidArgument, "required bytes %d exceed the limit %d", required, limit)
	}
	sourceID := req.VolumeContentSource.GetSnapshot().GetSnapshotId()

	d.controller.Lock()
	defer d.controller.Unlock()
	id := idOf("vol", req.Name)
	existing, err := d.volume(id)
	if err != nil {
		return nil, internal(err)
	}
	if existing != nil {
		if existing.CapacityBytes < required || (limit > 0 && existing.CapacityBytes > limit) {
			return nil, status.Errorf(codes.AlreadyExists, "volume %s exists with %d bytes", req.Name, existing.CapacityBytes)
		}
		if existing.SourceSnapshot != sourceID || existing.Block != block {
			return nil, status.Errorf(codes.AlreadyExists, "volume %s exists from another source or of another kind", req.Name)
		}
		return &csi.CreateVolumeResponse{Volume: existing.csi()}, nil
	}

	v := &volume{ID: id, Name: req.Name, CapacityBytes: required, SourceSnapshot: sourceID, Block: block}
	if v.CapacityBytes == 0 {
		v.CapacityBytes = limit
	}
	dir := filepath.Join(d.volumes, id)
	if sourceID != "" {
		source, err := d.snapshot(sourceID)
		if err != nil {
			return nil, internal(err)
		}
		if source == nil {
			return nil, status.Errorf(codes.NotFound, "snapshot %s not found", sourceID)
		}
		if v.CapacityBytes == 0 {
			v.CapacityBytes = source.SizeBytes
		}
		if v.CapacityBytes < source.SizeBytes {
			return nil, status.Errorf(codes.OutOfRange, "snapshot %s has %d bytes, more than %d", sourceID, source.SizeBytes, v.CapacityBytes)
		}
		if source.Block != block {
			return nil, status.Errorf(codes.InvalidArgument, "snapshot %s is of another kind of volume (block: %v)", sourceID, source.Block)
		}
		if err := copyTree(filepath.Join(d.snapshots, sourceID), dir); err != nil {
			return nil, internal(err)
		}
		// A block volume larger than its snapshot: the rest reads as zeros.
		if block {
			if err := os.Truncate(dir, v.CapacityBytes); err != nil {
				return nil, internal(err)
			}
		}
	} else if block {
		if v.CapacityBytes == 0 {
			v.CapacityBytes = defaultCapacity
		}
		if err := makeBlockFile(dir, v.CapacityBytes); err != nil {
			return nil, internal(err)
		}
	} else {
		if err := os.MkdirAll(dir, 0o777); err != nil {
			return nil, internal(err)
		}
		// Writable by any pod's user, as a fresh disk's root would be made for it; the umask
		// would otherwise take group and other write away.
		if err := os.Chmod(dir, 0o777); err != nil {
			return nil, internal(err)
		}
	}
	if v.CapacityBytes == 0 {
		v.CapacityBytes = defaultCapacity
	}
	if err := writeJSON(filepath.Join(d.volumes, id+".json"), v); err != nil {
		return nil, internal(err)
	}
	return &csi.CreateVolumeResponse{Volume: v.csi()}, nil
}

// makeBlockFile makes a block volume's file, of zeros (sparse), under a temporary name first.
func makeBlockFile(path string, size int64) error {
	partial := path + ".partial"
	file, err := os.OpenFile(partial, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	err = file.Truncate(size)
	if closed := file.Close(); err == nil {
		err = closed
	}
	if err != nil {
		_ = os.Remove(partial)
		return err
	}
	return os.Rename(partial, path)
}

func (d *driver) DeleteVolume(_ context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	if req.VolumeId == "" {
		return nil, status.Error(codes.InvalidArgument, "a volume id is required")
	}
	if !validID.MatchString(req.VolumeId) {
		return &csi.DeleteVolumeResponse{}, nil
	}
	d.controller.Lock()
	defer d.controller.Unlock()
	// The metadata goes last: a deletion cut short is finished by the next one.
	if err := os.RemoveAll(filepath.Join(d.volumes, req.VolumeId)); err != nil {
		return nil, internal(err)
	}
	if err := os.Remove(filepath.Join(d.volumes, req.VolumeId+".json")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, internal(err)
	}
	return &csi.DeleteVolumeResponse{}, nil
}

func (d *driver) ValidateVolumeCapabilities(_ context.Context, req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	if req.VolumeId == "" {
		return nil, status.Error(codes.InvalidArgument, "a volume id is required")
	}
	if len(req.VolumeCapabilities) == 0 {
		return nil, status.Error(codes.InvalidArgument, "volume capabilities are required")
	}
	v, err := d.volume(req.VolumeId)
	if err != nil {
		return nil, internal(err)
	}
	if v == nil {
		return nil, status.Errorf(codes.NotFound, "volume %s not found", req.VolumeId)
	}
	block, err := checkCapabilities(req.VolumeCapabilities)
	if err == nil {
		err = v.checkKind(block)
	}
	if err != nil {
		return &csi.ValidateVolumeCapabilitiesResponse{Message: status.Convert(err).Message()}, nil
	}
	return &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeContext:      req.VolumeContext,
		VolumeCapabilities: req.VolumeCapabilities,
		Parameters:         req.Parameters,
	}}, nil
}

func (d *driver) CreateSnapshot(_ context.Context, req *csi.CreateSnapshotRequest) (*csi.CreateSnapshotResponse, error) {
	if req.Name == "" {
		return nil, status.Error(codes.InvalidArgument, "a name is required")
	}
	if req.SourceVolumeId == "" {
		return nil, status.Error(codes.InvalidArgument, "a source volume id is required")
	}
	readyAfter := req.Parameters[readyAfterParameter]
	if readyAfter != "" && readyAfter != "never" {
		if _, err := time.ParseDuration(readyAfter); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "%s: %q is neither a Go duration nor \"never\"", readyAfterParameter, readyAfter)
		}
	}

	d.controller.Lock()
	defer d.controller.Unlock()
	id := idOf("snap", req.Name)
	existing, err := d.snapshot(id)
	if err != nil {
		return nil, internal(err)
	}
	if existing != nil {
		if existing.SourceVolume != req.SourceVolumeId {
			return nil, status.Errorf(codes.AlreadyExists, "snapshot %s exists of volume %s", req.Name, existing.SourceVolume)
		}
		return &csi.CreateSnapshotResponse{Snapshot: existing.csi()}, nil
	}
	source, err := d.volume(req.SourceVolumeId)
	if err != nil {
		return nil, internal(err)
	}
	if source == nil {
		return nil, status.Errorf(codes.NotFound, "volume %s not found", req.SourceVolumeId)
	}
	if err := copyTree(filepath.Join(d.volumes, source.ID), filepath.Join(d.snapshots, id)); err != nil {
		return nil, internal(err)
	}
	s := &snapshot{
		ID:           id,
		Name:         req.Name,
		SourceVolume: source.ID,
		SizeBytes:    source.CapacityBytes,
		CreatedAt:    time.Now().UTC(),
		ReadyAfter:   readyAfter,
		Block:        source.Block,
	}
	if err := writeJSON(filepath.Join(d.snapshots, id+".json"), s); err != nil {
		return nil, internal(err)
	}
	return &csi.CreateSnapshotResponse{Snapshot: s.csi()}, nil
}

func (d *driver) DeleteSnapshot(_ context.Context, req *csi.DeleteSnapshotRequest) (*csi.DeleteSnapshotResponse, error) {
	if req.SnapshotId == "" {
		return nil, status.Error(codes.InvalidArgument, "a snapshot id is required")
	}
	if !validID.MatchString(req.SnapshotId) {
		return &csi.DeleteSnapshotResponse{}, nil
	}
	d.controller.Lock()
	defer d.controller.Unlock()
	if err := os.RemoveAll(filepath.Join(d.snapshots, req.SnapshotId)); err != nil {
		return nil, internal(err)
	}
	if err := os.Remove(filepath.Join(d.snapshots, req.SnapshotId+".json")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, internal(err)
	}
	return &csi.DeleteSnapshotResponse{}, nil
}

// ListSnapshots lists by id, by source volume or all, in id order; a page's token is the index
// of its first entry.
func (d *driver) ListSnapshots(_ context.Context, req *csi.ListSnapshotsRequest) (*csi.ListSnapshotsResponse, error) {
	d.controller.Lock()
	defer d.controller.Unlock()
	var all []*snapshot
	if req.SnapshotId != "" {
		s, err := d.snapshot(req.SnapshotId)
		if err != nil {
			return nil, internal(err)
		}
		if s != nil && (req.SourceVolumeId == "" || s.SourceVolume == req.SourceVolumeId) {
			all = append(all, s)
		}
	} else {
		files, err := filepath.Glob(filepath.Join(d.snapshots, "snap-*.json"))
		if err != nil {
			return nil, internal(err)
		}
		sort.Strings(files)
		for _, file := range files {
			var s snapshot
			if ok, err := readJSON(file, &s); err != nil {
				return nil, internal(err)
			} else if ok && (req.SourceVolumeId == "" || s.SourceVolume == req.SourceVolumeId) {
				all = append(all, &s)
			}
		}
	}
	start := 0
	if req.StartingToken != "" {
		var err error
		start, err = strconv.Atoi(req.StartingToken)
		if err != nil || start < 0 || start > len(all) {
			return nil, status.Errorf(codes.Aborted, "starting token %q is not one this driver gave", req.StartingToken)
		}
	}
	end := len(all)
	if req.MaxEntries > 0 && start+int(req.MaxEntries) < end {
		end = start + int(req.MaxEntries)
	}
	out := &csi.ListSnapshotsResponse{}
	for _, s := range all[start:end] {
		out.Entries = append(out.Entries, &csi.ListSnapshotsResponse_Entry{Snapshot: s.csi()})
	}
	if end < len(all) {
		out.NextToken = strconv.Itoa(end)
	}
	return out, nil
}

// Node

func (d *driver) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{NodeId: d.nodeID}, nil
}

func (d *driver) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	return &csi.NodeGetCapabilitiesResponse{}, nil
}

// NodePublishVolume bind-mounts the volume's directory onto the target path (read-only if asked);
// a block volume's file is attached to a loop device, which is bind-mounted onto the target
// file, as a block driver publishes a device.
func (d *driver) NodePublishVolume(_ context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	if req.VolumeId == "" {
		return nil, status.Error(codes.InvalidArgument, "a volume id is required")
	}
	if req.TargetPath == "" {
		return nil, status.Error(codes.InvalidArgument, "a target path is required")
	}
	if req.VolumeCapability == nil {
		return nil, status.Error(codes.InvalidArgument, "a volume capability is required")
	}
	block, err := checkCapabilities([]*csi.VolumeCapability{req.VolumeCapability})
	if err != nil {
		return nil, err
	}
	v, err := d.volume(req.VolumeId)
	if err != nil {
		return nil, internal(err)
	}
	if v == nil {
		return nil, status.Errorf(codes.NotFound, "volume %s not found", req.VolumeId)
	}
	if err := v.checkKind(block); err != nil {
		return nil, err
	}

	d.node.Lock()
	defer d.node.Unlock()
	target := filepath.Clean(req.TargetPath)
	mounted, err := isMountPoint(target)
	if err != nil {
		return nil, internal(err)
	}
	if mounted {
		return &csi.NodePublishVolumeResponse{}, nil
	}
	source := filepath.Join(d.volumes, v.ID)
	if v.Block {
		if err := publishBlock(source, target, req.Readonly); err != nil {
			return nil, internal(err)
		}
		return &csi.NodePublishVolumeResponse{}, nil
	}
	if err := os.MkdirAll(target, 0o750); err != nil {
		return nil, internal(err)
	}
	if err := unix.Mount(source, target, "", unix.MS_BIND, ""); err != nil {
		return nil, internal(fmt.Errorf("bind-mounting %s on %s: %w", source, target, err))
	}
	if req.Readonly {
		// A bind mount takes the read-only flag only when remounted.
		if err := unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			_ = unix.Unmount(target, 0)
			return nil, internal(fmt.Errorf("making %s read-only: %w", target, err))
		}
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

func (d *driver) NodeUnpublishVolume(_ context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	if req.VolumeId == "" {
		return nil, status.Error(codes.InvalidArgument, "a volume id is required")
	}
	if req.TargetPath == "" {
		return nil, status.Error(codes.InvalidArgument, "a target path is required")
	}
	d.node.Lock()
	defer d.node.Unlock()
	target := filepath.Clean(req.TargetPath)
	mounted, err := isMountPoint(target)
	if err != nil {
		return nil, internal(err)
	}
	if mounted {
		// A block volume's loop device, detached once nothing is mounted on it.
		var loop string
		var st unix.Stat_t
		if err := unix.Stat(target, &st); err == nil && st.Mode&unix.S_IFMT == unix.S_IFBLK && unix.Major(st.Rdev) == loopMajor {
			loop = fmt.Sprintf("/dev/loop%d", unix.Minor(st.Rdev))
		}
		if err := unix.Unmount(target, 0); err != nil {
			return nil, internal(fmt.Errorf("unmounting %s: %w", target, err))
		}
		if loop != "" {
			if out, err := exec.Command("losetup", "--detach", loop).CombinedOutput(); err != nil {
				return nil, internal(fmt.Errorf("losetup --detach %s: %v: %s", loop, err, strings.TrimSpace(string(out))))
			}
		}
	}
	if err := os.Remove(target); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, internal(err)
	}
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// The major number of loop devices.
const loopMajor = 7

// publishBlock attaches a block volume's file to a free loop device (read-only if asked) and
// bind-mounts that device onto the file target, which it makes.
func publishBlock(file, target string, readOnly bool) error {
	args := []string{"--find", "--show"}
	if readOnly {
		args = append(args, "--read-only")
	}
	out, err := exec.Command("losetup", append(args, file)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("losetup %s: %v: %s", file, err, strings.TrimSpace(string(out)))
	}
	loop := strings.TrimSpace(string(out))
	detach := func() { _ = exec.Command("losetup", "--detach", loop).Run() }
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		detach()
		return err
	}
	placeholder, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		detach()
		return err
	}
	_ = placeholder.Close()
	if err := unix.Mount(loop, target, "", unix.MS_BIND, ""); err != nil {
		detach()
		return fmt.Errorf("bind-mounting %s on %s: %w", loop, target, err)
	}
	return nil
}

// isMountPoint says whether path is a mount point, from this process's mount table.
func isMountPoint(path string) (bool, error) {
	file, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return false, err
	}
	defer file.Close()
	lines := bufio.NewScanner(file)
	lines.Buffer(make([]byte, 64*1024), 1024*1024)
	for lines.Scan() {
		// The fifth field is the mount point, with spaces, tabs, newlines and backslashes in octal.
		fields := strings.Fields(lines.Text())
		if len(fields) > 4 && unescapeOctal(fields[4]) == path {
			return true, nil
		}
	}
	return false, lines.Err()
}

func unescapeOctal(s string) string {
	return strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`).Replace(s)
}
