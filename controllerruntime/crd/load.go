package crd

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/ctrlkit/ctrlkit/memcluster"
)

// Manifest is a CustomResourceDefinition read from a file, with where it
// was found.
type Manifest struct {
	CRD *CRD
	// File and Document (1-based, in the order of the file's "---"
	// separated documents) say where it comes from.
	File     string
	Document int
}

func (m Manifest) String() string {
	if m.File == "" {
		return m.CRD.Name
	}
	return fmt.Sprintf("%s (%s, document %d)", m.CRD.Name, m.File, m.Document)
}

// Load reads the CustomResourceDefinitions of paths as envtest reads its
// CRDDirectoryPaths: each path is a file or a directory (whose files are
// read, not its subdirectories); files ending in .yaml, .yml or .json
// hold one or more documents (YAML separated by "---", or JSON); documents
// of other kinds are skipped. Unlike envtest, a path that does not exist is
// an error, and the manifests come in a fixed order: paths in the order
// given, files by name, documents in order. A document that cannot be read
// is an error naming its file and document, and so is an
// apiextensions.k8s.io/v1beta1 CRD (kube-apiserver v1.22 and later serve
// v1 only).
func Load(paths ...string) ([]Manifest, error) {
	var out []Manifest
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("crd: %w", err)
		}
		files := []string{p}
		if info.IsDir() {
			entries, err := os.ReadDir(p)
			if err != nil {
				return nil, fmt.Errorf("crd: %w", err)
			}
			files = files[:0]
			for _, e := range entries {
				switch filepath.Ext(e.Name()) {
				case ".yaml", ".yml", ".json":
					if !e.IsDir() {
						files = append(files, filepath.Join(p, e.Name()))
					}
				}
			}
			slices.Sort(files)
		}
		for _, f := range files {
			ms, err := loadFile(f)
			if err != nil {
				return nil, err
			}
			out = append(out, ms...)
		}
	}
	return out, nil
}

// loadFile reads the CRDs of one file.
func loadFile(file string) ([]Manifest, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("crd: %w", err)
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	var out []Manifest
	for doc := 1; ; doc++ {
		raw, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("crd: %s, document %d: %w", file, doc, err)
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			doc--
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(raw, &tm); err != nil {
			return nil, fmt.Errorf("crd: %s, document %d: %w", file, doc, err)
		}
		if tm.Kind != "CustomResourceDefinition" {
			continue
		}
		if tm.APIVersion != apiextensionsv1.SchemeGroupVersion.String() {
			return nil, fmt.Errorf("crd: %s, document %d: a CustomResourceDefinition of %s: only %s is served (convert it, e.g. with a current controller-gen)",
				file, doc, tm.APIVersion, apiextensionsv1.SchemeGroupVersion)
		}
		crd := &CRD{}
		if err := yaml.Unmarshal(raw, crd); err != nil {
			return nil, fmt.Errorf("crd: %s, document %d: %w", file, doc, err)
		}
		out = append(out, Manifest{CRD: crd, File: file, Document: doc})
	}
}

// Install creates crds through the cluster's API, in order, as envtest
// installs them, and checks each is established: a CRD kube-apiserver
// would refuse is an error naming it (and its file, for a Manifest), with
// kube-apiserver's message. A CRD of the same name that exists already is
// updated to crd.
func (s *Server) Install(ctx context.Context, crds ...*CRD) error {
	for _, crd := range crds {
		if err := s.install(ctx, Manifest{CRD: crd}); err != nil {
			return err
		}
	}
	return nil
}

// InstallManifests is Install for manifests from [Load].
func (s *Server) InstallManifests(ctx context.Context, ms ...Manifest) error {
	for _, m := range ms {
		if err := s.install(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

// InstallPaths loads the CRDs of paths (see [Load]) and installs them.
func (s *Server) InstallPaths(ctx context.Context, paths ...string) error {
	ms, err := Load(paths...)
	if err != nil {
		return err
	}
	return s.InstallManifests(ctx, ms...)
}

func (s *Server) install(ctx context.Context, m Manifest) error {
	if m.CRD == nil {
		return errors.New("crd: install: a nil CustomResourceDefinition")
	}
	in := m.CRD.DeepCopy()
	in.ResourceVersion, in.UID = "", ""
	in.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
	cl := s.crds.Namespace("")
	_, err := cl.Create(ctx, in, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		var cur *CRD
		if cur, err = cl.Get(ctx, in.Name, metav1.GetOptions{}); err == nil {
			in.ResourceVersion = cur.ResourceVersion
			_, err = cl.Update(ctx, in, metav1.UpdateOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("crd: install %s: %w", m, err)
	}
	cur, err := cl.Get(ctx, in.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("crd: install %s: %w", m, err)
	}
	if !apihelpers.IsCRDConditionTrue(cur, apiextensionsv1.Established) {
		why := "not established"
		if err := s.failure(in.Name); err != nil {
			why = err.Error()
		}
		if c := apihelpers.FindCRDCondition(cur, apiextensionsv1.NamesAccepted); c != nil && c.Status != apiextensionsv1.ConditionTrue {
			why = fmt.Sprintf("names not accepted (%s): %s", c.Reason, c.Message)
		}
		return fmt.Errorf("crd: install %s: %s", m, why)
	}
	return nil
}

// Bench sets up CRDs as the test bench (controllerruntime/clustertest)
// does for Options.CRDDirectoryPaths and Options.CRDs: it serves
// CustomResourceDefinitions on c, installs the CRDs of paths (see [Load])
// and crds through the API, in that order, and returns the CRDs
// installed.
func Bench(ctx context.Context, c *memcluster.Cluster, paths []string, crds []*CRD) ([]*CRD, error) {
	s, err := Serve(c)
	if err != nil {
		return nil, err
	}
	ms, err := Load(paths...)
	if err != nil {
		return nil, err
	}
	for _, crd := range crds {
		ms = append(ms, Manifest{CRD: crd})
	}
	if err := s.InstallManifests(ctx, ms...); err != nil {
		return nil, err
	}
	out := make([]*CRD, len(ms))
	for i, m := range ms {
		out[i] = m.CRD
	}
	return out, nil
}
